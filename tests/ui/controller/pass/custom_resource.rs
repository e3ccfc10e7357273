use informer::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A custom resource made with kube's derive.
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Backup", namespaced)]
pub struct BackupSpec {
    pub schedule: String,
}

#[indexer(Backup)]
fn by_schedule(backup: &Backup) -> String {
    backup.spec.schedule.clone()
}

#[derive(ControllerSpec)]
#[controller(for = Backup, index = [BySchedule], owns(ConfigMap))]
struct Backups;

impl Reconcile for Backups {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        _key: &ObjectKey,
        backup: Option<Arc<Backup>>,
    ) -> Result<Action, ReconcileError> {
        let _: Vec<Arc<Backup>> = ctx.backups().by_index::<BySchedule>("@daily");
        let _: &Lister<ConfigMap> = ctx.config_maps();
        let _ = backup.map(|b| b.spec.schedule.clone());
        Ok(Action::Done)
    }
}

fn main() {}
