//! A running informer over widgets, and a handler that records its notifications and checks
//! they form a consistent history.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use informer_core::{Deleted, Notification, ObjectKey};
use informer_runtime::informer::InformerError;
use informer_runtime::{CancellationToken, SharedIndexInformer};
use kube::core::DynamicObject;
use tokio::task::JoinHandle;

use super::server::rv_of;

pub fn key_of(o: &DynamicObject) -> ObjectKey {
    ObjectKey::new(
        o.metadata.namespace.as_deref(),
        o.metadata.name.as_deref().unwrap_or_default(),
    )
}

fn notification_key(n: &Notification<DynamicObject>) -> ObjectKey {
    match n {
        Notification::Add { object, .. } => key_of(object),
        Notification::Update { new, .. } => key_of(new),
        Notification::Delete(Deleted::Object(o)) => key_of(o),
        Notification::Delete(Deleted::FinalStateUnknown { key, .. }) => key.clone(),
    }
}

/// Records every notification one handler receives.
#[derive(Clone)]
pub struct Recorder {
    pub name: &'static str,
    notes: Arc<Mutex<Vec<Notification<DynamicObject>>>>,
}

impl Recorder {
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            notes: Arc::default(),
        }
    }

    pub fn handler(&self) -> impl Fn(&Notification<DynamicObject>) + Send + Sync + 'static + use<> {
        let notes = self.notes.clone();
        move |n: &Notification<DynamicObject>| {
            notes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(n.clone())
        }
    }

    pub fn notifications(&self) -> Vec<Notification<DynamicObject>> {
        self.notes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Names of the objects whose deletion was delivered as final state unknown.
    pub fn final_state_unknown_deletes(&self) -> Vec<String> {
        self.notifications()
            .iter()
            .filter_map(|n| match n {
                Notification::Delete(Deleted::FinalStateUnknown { key, .. }) => {
                    Some(key.name().to_owned())
                }
                _ => None,
            })
            .collect()
    }

    /// Replays the notifications per key and returns the final state, or what is
    /// inconsistent: an add of a present key, an update or delete of an absent one, an update
    /// whose `old` was never delivered, a resource version going back, a final-state-unknown
    /// delete without its last state.
    pub fn replay(&self) -> Result<HashMap<ObjectKey, Arc<DynamicObject>>, String> {
        let notifications = self.notifications();
        let mut state: HashMap<ObjectKey, Arc<DynamicObject>> = HashMap::new();
        for (i, n) in notifications.iter().enumerate() {
            let key = notification_key(n);
            let at = |what: String| {
                format!(
                    "{}: notification #{i} of {key}: {what}; its history: {}",
                    self.name,
                    history(&notifications[..=i], &key)
                )
            };
            match n {
                Notification::Add { object, .. } => {
                    if state.insert(key.clone(), object.clone()).is_some() {
                        return Err(at("an add of a present object".into()));
                    }
                }
                Notification::Update { old, new } => {
                    let Some(last) = state.insert(key.clone(), new.clone()) else {
                        return Err(at("an update of an absent object".into()));
                    };
                    if !Arc::ptr_eq(&last, old) && last != *old {
                        return Err(at(format!(
                            "an update whose old object (rv {}) was never delivered (last: rv {})",
                            rv_of(old),
                            rv_of(&last)
                        )));
                    }
                    if rv_of(new) < rv_of(old) {
                        return Err(at(format!(
                            "an update back from rv {} to rv {}",
                            rv_of(old),
                            rv_of(new)
                        )));
                    }
                }
                Notification::Delete(deleted) => {
                    if let Deleted::FinalStateUnknown {
                        last_known: None, ..
                    } = deleted
                    {
                        return Err(at(
                            "a final-state-unknown delete without its last state".into()
                        ));
                    }
                    if state.remove(&key).is_none() {
                        return Err(at("a delete of an absent object".into()));
                    }
                }
            }
        }
        Ok(state)
    }
}

fn history(notifications: &[Notification<DynamicObject>], key: &ObjectKey) -> String {
    notifications
        .iter()
        .enumerate()
        .filter(|(_, n)| notification_key(n) == *key)
        .map(|(i, n)| match n {
            Notification::Add { object, .. } => format!("#{i} add rv {}", rv_of(object)),
            Notification::Update { old, new } => {
                format!("#{i} update rv {} -> {}", rv_of(old), rv_of(new))
            }
            Notification::Delete(Deleted::Object(o)) => format!("#{i} delete rv {}", rv_of(o)),
            Notification::Delete(Deleted::FinalStateUnknown { .. }) => {
                format!("#{i} final-state-unknown delete")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// An informer running on its own task.
pub struct Running {
    pub informer: SharedIndexInformer<DynamicObject>,
    cancel: CancellationToken,
    task: JoinHandle<Result<(), InformerError>>,
}

impl Running {
    pub fn start(informer: SharedIndexInformer<DynamicObject>) -> Self {
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (informer, cancel) = (informer.clone(), cancel.clone());
            async move { informer.run(cancel).await }
        });
        Self {
            informer,
            cancel,
            task,
        }
    }

    /// The cached objects by key.
    pub fn cached(&self) -> HashMap<ObjectKey, DynamicObject> {
        self.informer
            .lister()
            .list()
            .iter()
            .map(|o| (key_of(o), (**o).clone()))
            .collect()
    }

    /// Cancels the informer; `Err` if it does not stop within 10 s or failed.
    pub async fn stop(self) -> Result<(), String> {
        self.cancel.cancel();
        match tokio::time::timeout(Duration::from_secs(10), self.task).await {
            Err(_) => Err("the informer did not stop within 10 s of cancel".into()),
            Ok(Err(e)) => Err(format!("the informer task failed: {e}")),
            Ok(Ok(Err(e))) => Err(format!("the informer failed: {e}")),
            Ok(Ok(Ok(()))) => Ok(()),
        }
    }
}
