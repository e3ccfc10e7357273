//! `#[derive(ControllerSpec)]`: [`ast`] parses the attributes into an IR, [`check`] validates
//! it with every error collected, [`expand`] generates the code.

mod ast;
mod check;
mod expand;

use proc_macro2::TokenStream;
use syn::DeriveInput;

use crate::ctxt::Ctxt;

/// The derive (as `#[derive(ControllerSpec)]`, or its deprecated old name `Controller`).
pub fn derive(input: DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let controller = ast::Controller::from_ast(&cx, &input);
    check::check(&cx, &input, &controller);
    let valid = !cx.has_errors();
    let code = if matches!(input.data, syn::Data::Struct(_)) && input.generics.params.is_empty() {
        expand::expand(&controller, valid)
    } else {
        TokenStream::new()
    };
    let errors = cx.into_compile_errors();
    quote::quote! {
        #errors
        #code
    }
}
