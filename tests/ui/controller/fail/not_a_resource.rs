use informer::prelude::*;

#[derive(Controller)]
#[controller(for = String)]
struct Strings;

fn main() {}

impl Reconcile for Strings {
    async fn reconcile(
        &self,
        _ctx: &Context<Self>,
        _key: &ObjectKey,
        _obj: Option<Arc<String>>,
    ) -> Result<Action, ReconcileError> {
        Ok(Action::Done)
    }
}
