use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};

use super::*;
use crate::controller::{Action, ControllerBuilder, reconciler_fn};
use crate::factory::{InformerFactory, InformerParams};
use informer_testing::MemoryListerWatcher;

struct Spec;

impl ControllerSpec for Spec {
    type Resource = ConfigMap;
    type Listers = Lister<Secret>;
    fn configure(&self, b: ControllerBuilder<ConfigMap>) -> ControllerBuilder<ConfigMap> {
        b.owns::<Secret>()
    }
    fn listers(controller: &Controller<ConfigMap>) -> Lister<Secret> {
        related_lister(controller)
    }
}

fn controller(factory: &InformerFactory) -> Controller<ConfigMap> {
    Spec.configure(Controller::builder(factory))
        .build(reconciler_fn(|_k, _c: Option<Arc<ConfigMap>>| async {
            Ok(Action::Done)
        }))
        .unwrap()
}

fn memory_factory() -> (InformerFactory, Vec<Box<dyn std::any::Any>>) {
    let factory = InformerFactory::without_client();
    let handles: Vec<Box<dyn std::any::Any>> = vec![
        Box::new(factory.informer_from(InformerParams::all(), || {
            Arc::new(MemoryListerWatcher::<ConfigMap>::new())
        })),
        Box::new(factory.informer_from(InformerParams::all(), || {
            Arc::new(MemoryListerWatcher::<Secret>::new())
        })),
    ];
    (factory, handles)
}

#[test]
fn the_context_derefs_to_the_spec_listers() {
    let (factory, _handles) = memory_factory();
    let controller = controller(&factory);
    let ctx = Context::<Spec>::new(&controller);
    assert!(ctx.is_empty(), "Lister<Secret>::is_empty through Deref");
    assert!(ctx.lister().is_empty());
    assert_eq!(ctx.name(), "configmap");
    assert!(format!("{ctx:?}").contains("configmap"));
}

#[tokio::test]
async fn without_a_client_every_request_fails_with_no_client() {
    let (factory, _handles) = memory_factory();
    let controller = controller(&factory);
    let ctx = Context::<Spec>::new(&controller);
    let error = ctx
        .api::<Secret>("default")
        .get_opt("x")
        .await
        .expect_err("no client");
    assert!(
        error.to_string().contains("no Kubernetes client"),
        "{error}"
    );
}
