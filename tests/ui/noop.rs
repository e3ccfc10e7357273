/// `impl Reconcile for $controller` that does nothing: these ui tests are about the
/// attributes, not about reconciling.
macro_rules! noop_reconcile {
    ($controller:ty, $resource:ty) => {
        impl informer::prelude::Reconcile for $controller {
            async fn reconcile(
                &self,
                _ctx: &informer::prelude::Context<Self>,
                _key: &informer::prelude::ObjectKey,
                _obj: Option<std::sync::Arc<$resource>>,
            ) -> Result<informer::prelude::Action, informer::prelude::ReconcileError> {
                Ok(informer::prelude::Action::Done)
            }
        }
    };
}
