//! Declared children of a derived controller, end to end through a real `kube::Client`,
//! against both API servers from one test body (the in-process fake, and the real API
//! server of `EnvTest`: skipped, saying why, without its binaries).
//!
//! A `Site` (a custom resource) wants one `Page` (another custom resource) per page it
//! lists, in its namespace, and an archive copy of itself in namespace `archive`: children
//! of custom resources, tied by owner references and, across namespaces, by labels.

use informer::prelude::*;
use informer::runtime::controller::{CONTROLLER_LABEL, OWNER_ANNOTATION, OWNER_UID_LABEL};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::servers::{Server, on_both_servers, until};

/// A site and its pages.
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "children.example.com",
    version = "v1",
    kind = "Site",
    namespaced
)]
struct SiteSpec {
    pages: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    footer: Option<String>,
}

/// One page of a site; the archive holds a copy of each site as a page too.
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "children.example.com",
    version = "v1",
    kind = "Page",
    namespaced
)]
struct PageSpec {
    title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    footer: Option<String>,
}

/// A page per listed page, in the site's namespace (owned by reference), and the site's
/// archive copy in namespace `archive` (owned by labels). Reads the context, as a function
/// computing children may.
fn pages(site: &Site, ctx: &Context<Sites>) -> Vec<Page> {
    let _cached = ctx.pages().len(); // the context's listers are at hand
    let mut pages: Vec<Page> = site
        .spec
        .pages
        .iter()
        .map(|title| {
            Page::new(
                &format!("{}-{title}", site.name_any()),
                PageSpec {
                    title: title.clone(),
                    footer: site.spec.footer.clone(),
                },
            )
        })
        .collect();
    let namespace = site.namespace().unwrap_or_default();
    let mut copy = Page::new(
        &format!("{namespace}.{}", site.name_any()),
        PageSpec {
            title: site.spec.pages.join(","),
            footer: None,
        },
    );
    copy.metadata.namespace = Some("archive".into());
    pages.push(copy);
    pages
}

#[derive(ControllerSpec)]
#[controller(for = Site, namespace = "default", children(Page, from = pages, all_namespaces))]
struct Sites;

// Children are all it does.
impl Reconcile for Sites {}

/// The fake, serving both resources, with namespace `archive`.
async fn fake() -> Server {
    let server = Server::fake([Site::crd(), Page::crd()]).await;
    let mut archive = Namespace::default();
    archive.metadata.name = Some("archive".into());
    Api::<Namespace>::all(server.client())
        .create(&PostParams::default(), &archive)
        .await
        .expect("namespace archive is created");
    server
}

/// The real server, serving both resources (`None`, the reason printed, without it).
async fn real() -> Option<Server> {
    Server::real([Site::crd(), Page::crd()]).await
}

async fn a_site_declares_its_pages_and_its_archive_copy(server: Server) {
    let client = server.client();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(Sites.run_until(client.clone(), cancel.clone()));
    let sites = Api::<Site>::namespaced(client.clone(), "default");
    let pages = Api::<Page>::namespaced(client.clone(), "default");
    let archived = Api::<Page>::namespaced(client, "archive");
    let page = async |name: &str| pages.get_opt(name).await.expect("pages can be read");
    let copy = async || {
        archived
            .get_opt("default.blog")
            .await
            .expect("archived pages can be read")
    };

    let blog = Site::new(
        "blog",
        SiteSpec {
            pages: vec!["home".into(), "about".into()],
            footer: Some("(c) 2026".into()),
        },
    );
    let blog = sites
        .create(&PostParams::default(), &blog)
        .await
        .expect("the site is created");
    until("both pages and the archive copy exist", async || {
        page("blog-home").await.is_some()
            && page("blog-about").await.is_some()
            && copy().await.is_some()
    })
    .await;
    let home = page("blog-home").await.unwrap();
    assert_eq!(home.spec.footer.as_deref(), Some("(c) 2026"));
    let refs = home.owner_references();
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(
        (
            refs[0].kind.as_str(),
            refs[0].uid.as_str(),
            refs[0].controller
        ),
        ("Site", blog.uid().unwrap().as_str(), Some(true))
    );
    assert_eq!(
        home.labels().get(CONTROLLER_LABEL).map(String::as_str),
        Some("sites")
    );
    let archived_copy = copy().await.unwrap();
    assert!(archived_copy.owner_references().is_empty());
    assert_eq!(
        archived_copy.labels().get(OWNER_UID_LABEL),
        blog.uid().as_ref()
    );
    assert_eq!(
        archived_copy.annotations().get(OWNER_ANNOTATION),
        Some(&"default/blog".to_owned())
    );
    assert_eq!(archived_copy.spec.title, "home,about");

    // A page no longer listed goes; a field no longer wanted goes (server-side apply: the
    // controller's field manager owned it; both servers track field ownership).
    let change = Patch::Merge(json!({"spec": {"pages": ["home"], "footer": null}}));
    sites
        .patch("blog", &PatchParams::default(), &change)
        .await
        .expect("the site is changed");
    until("blog-about is deleted and the copy follows", async || {
        page("blog-about").await.is_none() && copy().await.is_some_and(|c| c.spec.title == "home")
    })
    .await;
    until("the footer is gone from blog-home", async || {
        page("blog-home")
            .await
            .is_some_and(|p| p.spec.footer.is_none())
    })
    .await;

    // The site goes: its archive copy (labels) is deleted by the controller. Its pages
    // (owner references) are the garbage collector's: the fake server runs one; the real
    // API server alone runs none (kube-controller-manager does).
    sites
        .delete("blog", &Default::default())
        .await
        .expect("the site is deleted");
    until("the archive copy is deleted", async || {
        copy().await.is_none()
    })
    .await;
    if !server.is_real() {
        until("the pages are collected", async || {
            page("blog-home").await.is_none()
        })
        .await;
    }
    cancel.cancel();
    run.await
        .expect("the controller task ends")
        .expect("the controller stops cleanly");
}

on_both_servers!(
    a_site_declares_its_pages_and_its_archive_copy,
    declared_children_of_a_custom_resource_on_the_fake_server = fake().await,
    declared_children_of_a_custom_resource_on_the_real_server = real().await,
);
