//! A derived controller of a custom resource end to end, against both API servers from one
//! test body: the in-process fake (`TestApiServer`) and a real one (upstream
//! apiextensions-apiserver on etcd, `EnvTest`; skipped, saying why, without its binaries).
//!
//! `Widget`s own `Gadget`s (both custom resources: the real server serves nothing else). The
//! controller keeps one Gadget per Widget, sized as the Widget asks, and reports in the
//! Widget's status what it did.

use std::sync::Arc;
use std::time::Duration;

use informer::prelude::*;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::servers::{Server, on_both_servers, until};
use tokio::sync::mpsc;

/// What a widget asks for.
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
struct WidgetSpec {
    size: u32,
}

/// What the controller last did for a widget.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
struct WidgetStatus {
    gadget_size: u32,
}

/// A widget's part, owned by it.
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Gadget", namespaced)]
struct GadgetSpec {
    size: u32,
}

#[derive(ControllerSpec)]
#[controller(for = Widget, owns(Gadget, index = [ByControllerUid]))]
struct Widgets {
    /// Each reconcile's key and whether its widget was there.
    seen: mpsc::UnboundedSender<(String, bool)>,
}

impl Reconcile for Widgets {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        widget: Option<Arc<Widget>>,
    ) -> Result<Action, ReconcileError> {
        let _ = self.seen.send((key.to_string(), widget.is_some()));
        let Some(widget) = widget else {
            return Ok(Action::Done);
        };
        let client = ctx.client().clone();
        let namespace = key.namespace().unwrap_or("default");
        let size = widget.spec.size;
        let uid = widget.uid().unwrap_or_default();
        let gadgets = Api::<Gadget>::namespaced(client.clone(), namespace);
        match ctx.gadgets().by_index::<ByControllerUid>(&uid).pop() {
            None => {
                let mut gadget =
                    Gadget::new(&format!("{}-gadget", key.name()), GadgetSpec { size });
                gadget.metadata.owner_references = Some(vec![
                    widget
                        .controller_owner_ref(&())
                        .expect("a widget has a uid"),
                ]);
                gadgets.create(&PostParams::default(), &gadget).await?;
            }
            Some(gadget) if gadget.spec.size != size => {
                let patch = Patch::Merge(json!({"spec": {"size": size}}));
                gadgets
                    .patch(&gadget.name_any(), &PatchParams::default(), &patch)
                    .await?;
            }
            Some(_) => {}
        }
        if widget.status.as_ref().map(|s| s.gadget_size) != Some(size) {
            let widgets = Api::<Widget>::namespaced(client, namespace);
            let patch = Patch::Merge(json!({"status": {"gadgetSize": size}}));
            widgets
                .patch_status(key.name(), &PatchParams::default(), &patch)
                .await?;
        }
        Ok(Action::Done)
    }
}

/// The fake, serving both resources.
async fn fake() -> Server {
    Server::fake([Widget::crd(), Gadget::crd()]).await
}

/// The real server, serving both resources (`None`, the reason printed, without it).
async fn real() -> Option<Server> {
    Server::real([Widget::crd(), Gadget::crd()]).await
}

async fn widget_owns_a_gadget_sized_as_it_asks(server: Server) {
    let client = server.client();
    let (seen, mut reconciled) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(Widgets { seen }.run_until(client.clone(), cancel.clone()));
    let widgets = Api::<Widget>::namespaced(client.clone(), "default");
    let gadgets = Api::<Gadget>::namespaced(client, "default");
    let gadget = async |name: &str| gadgets.get_opt(name).await.expect("gadgets can be read");
    let reported = async || {
        let widget = widgets.get("w").await.expect("w can be read");
        widget.status.map(|s| s.gadget_size)
    };

    widgets
        .create(
            &PostParams::default(),
            &Widget::new("w", WidgetSpec { size: 2 }),
        )
        .await
        .expect("w is created");
    until("w-gadget has size 2 and w reports it", async || {
        gadget("w-gadget").await.map(|g| g.spec.size) == Some(2) && reported().await == Some(2)
    })
    .await;
    let w = widgets.get("w").await.expect("w can be read");
    let owner = gadget("w-gadget").await.expect("w-gadget exists");
    let refs = owner.owner_references();
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(Some(&refs[0].uid), w.uid().as_ref());
    assert_eq!(refs[0].controller, Some(true));

    let resize = Patch::Merge(json!({"spec": {"size": 5}}));
    widgets
        .patch("w", &PatchParams::default(), &resize)
        .await
        .expect("w is resized");
    until("w-gadget has size 5 and w reports it", async || {
        gadget("w-gadget").await.map(|g| g.spec.size) == Some(5) && reported().await == Some(5)
    })
    .await;

    widgets
        .delete("w", &Default::default())
        .await
        .expect("w is deleted");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let next = tokio::time::timeout_at(deadline, reconciled.recv())
            .await
            .expect("the reconcile of the deleted widget comes")
            .expect("the controller runs");
        if next == ("default/w".to_owned(), false) {
            break;
        }
    }

    cancel.cancel();
    run.await
        .expect("the controller task ends")
        .expect("the controller stops cleanly");
}

on_both_servers!(
    widget_owns_a_gadget_sized_as_it_asks,
    derived_controller_of_a_custom_resource_on_the_fake_server = fake().await,
    derived_controller_of_a_custom_resource_on_the_real_server = real().await,
);
