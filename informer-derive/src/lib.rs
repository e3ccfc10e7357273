//! Derive macros for `informer`: [`macro@ControllerSpec`], [`macro@indexer`] and
//! [`macro@View`].
//!
//! All three generate code over public APIs of `informer-runtime` (the controller builder,
//! the `Index` trait, the `View` trait); nothing they do is out of reach of hand-written
//! code. Use them through the `informer` crate, which re-exports them.
//!
//! How this crate is built: `ControllerSpec` parses its input into a small IR
//! (`controller::ast`), validates it with every mistake collected (`controller::check`),
//! then generates code (`controller::expand`); `indexer` and `View` each parse, check and
//! generate in one module (`indexer`, `view`). On a mistake the user's item is still emitted
//! with what can be generated, beside the errors, so the rest of their code keeps
//! compiling.

mod controller;
mod ctxt;
mod duration;
mod indexer;
mod names;
mod parse;
mod symbol;
mod view;

use proc_macro::TokenStream;

/// Derives `ControllerSpec` for a struct from its `#[controller(...)]` attributes: a
/// controller of the primary resource, with typed informers, listers, indexes, declared
/// children and queue wiring. Documented in full, with every attribute, in the `informer`
/// crate (`informer::derive`).
#[proc_macro_derive(ControllerSpec, attributes(controller))]
pub fn derive_controller_spec(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    controller::derive(input).into()
}

/// The old name of [`macro@ControllerSpec`]: the same derive, deprecated (rustc's warning,
/// at the user's `#[derive(Controller)]`, names the new one).
#[proc_macro_derive(Controller, attributes(controller))]
#[deprecated(
    since = "0.1.0",
    note = "`#[derive(Controller)]` is now `#[derive(ControllerSpec)]`, after the trait it implements (`Controller` is also the struct a builder makes)"
)]
pub fn derive_controller(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    controller::derive(input).into()
}

/// Turns a function `fn(&Resource) -> values` into a typed index of `Resource`: keeps the
/// function and adds a unit struct (the function's name in CamelCase) implementing
/// `Index<Resource>`. Documented in the `informer` crate (`informer::derive`).
#[proc_macro_attribute]
pub fn indexer(args: TokenStream, item: TokenStream) -> TokenStream {
    indexer::expand(args.into(), item.into()).into()
}

/// Derives `kube::Resource`, `informer_runtime::view::View`, `Deserialize` and `Serialize`
/// for a struct
/// with the JSON shape of a resource (a few of its fields, `metadata` among them), named by
/// `#[view(of = Resource)]` (and `metadata(...)`, the metadata fields kept): informers,
/// listers and controllers then cache and hand out the view, decoded straight from the wire.
/// Documented in the `informer` crate (`informer::view`).
#[proc_macro_derive(View, attributes(view, serde))]
pub fn derive_view(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    view::derive(input).into()
}
