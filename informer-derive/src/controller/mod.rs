//! `#[derive(ControllerSpec)]`: [`ast`] parses the attributes into an IR, [`check`] validates
//! it with every error collected, [`expand`] generates the code.

mod ast;
mod check;
mod expand;

use proc_macro2::TokenStream;
use syn::DeriveInput;

use crate::ctxt::Ctxt;

/// The derive; `old_name`: invoked as `#[derive(Controller)]`, which warns.
pub fn derive(input: DeriveInput, old_name: bool) -> TokenStream {
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
    let renamed = old_name.then(|| {
        let krate = &controller.krate;
        // Spanned at the struct's name, so that the warning is the user's, on their item.
        quote::quote_spanned! {controller.ident.span()=>
            #krate::__derive::derive_controller_renamed!();
        }
    });
    quote::quote! {
        #errors
        #renamed
        #code
    }
}
