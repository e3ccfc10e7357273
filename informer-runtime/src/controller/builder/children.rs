//! Wiring a declared child type: an informer of the controller's children of that type
//! (selected by the controller's label), an index of them by parent, a handler queueing the
//! parent of each child that changes, and the [`ChildSet`] that brings them in line.

use std::sync::Arc;

use informer_core::{IndexError, Indexer};
use serde::Serialize;

use super::wiring::{Related, RelatedContext, related_with};
use super::{BuildError, WatchOptions};
use crate::controller::ControllerResource;
use crate::controller::children::{ChildSet, DesiredFn, Ownership, parent_key};
use crate::controller::enqueue::Mapping;

/// Wires the children of type `C` of a controller of `P`.
pub(super) fn wire_children<P, C>(
    ctx: &RelatedContext<'_, P>,
    desired: DesiredFn<P, C>,
    options: WatchOptions<C>,
) -> Result<Related<P>, BuildError>
where
    P: ControllerResource,
    C: ControllerResource + Serialize,
{
    let ownership = Ownership::of::<P>(ctx.controller);
    let mut params = options.params(ctx.namespace);
    params.label_selector = Some(match params.label_selector.take() {
        Some(user) => format!("{},{user}", ownership.selector()),
        None => ownership.selector(),
    });
    let watched_namespace = params.namespace.clone();
    let create_only = options.create_only;
    let for_index = ownership.clone();
    let for_mapper = ownership.clone();
    let index_name = ownership.index_name();
    let mapping = Mapping::Mapper(Arc::new(move |child: &C| {
        parent_key(&for_mapper, child).into_iter().collect()
    }));
    let mut related = related_with(ctx, "children", mapping, options, params, |indexer| {
        ensure_children_index(indexer, &index_name, move |child: &C| {
            parent_key(&for_index, child)
                .map(|key| key.to_string())
                .into_iter()
                .collect()
        })
        .map_err(|source| BuildError::Index {
            name: index_name.clone(),
            informer: format!("children of controller {}", ctx.controller),
            source,
        })
    })?;
    let children = related
        .lister
        .1
        .downcast_ref::<crate::lister::Lister<C>>()
        .expect("the lister of the children's informer")
        .clone();
    related.children = Some(Arc::new(ChildSet {
        desired,
        children,
        parents: ctx.parents.clone(),
        client: ctx.client.clone(),
        field_manager: ctx.controller.to_owned(),
        ownership,
        watched_namespace,
        parent_view: ctx.parent_view.clone(),
        create_only,
        recorder: crate::events::EventRecorder::of_controller(ctx.factory.client(), ctx.controller),
    }));
    Ok(related)
}

/// Registers the index of children by parent key on `indexer`, unless it is there (a
/// controller rebuilt over the same factory).
fn ensure_children_index<C: 'static>(
    indexer: &dyn Indexer<C>,
    name: &str,
    values: impl Fn(&C) -> Vec<String> + Send + Sync + 'static,
) -> Result<(), IndexError> {
    if indexer.index_names().iter().any(|n| n == name) {
        return Ok(());
    }
    let indexers = [(name.to_owned(), informer_core::index_fn(values))].into();
    match indexer.add_indexers(indexers) {
        Ok(()) | Err(IndexError::Conflict(_)) => Ok(()),
        Err(e) => Err(e),
    }
}
