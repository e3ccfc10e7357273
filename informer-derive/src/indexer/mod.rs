//! `#[indexer(Resource)]` on a function `fn(&Resource) -> values`: keeps the function and
//! adds a unit struct implementing `Index<Resource>` for it.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn, Path, ReturnType, Type};

use crate::ctxt::Ctxt;
use crate::names::camel_case;
use crate::parse::{once, parse_entries, value};
use crate::symbol::{CRATE, INDEXER_KEYS, NAME};

struct Args {
    resource: Option<Type>,
    name: Option<syn::Ident>,
    krate: Option<Path>,
}

fn parse_args(cx: &Ctxt, args: TokenStream) -> Args {
    let mut out = Args {
        resource: None,
        name: None,
        krate: None,
    };
    let parser = |input: ParseStream<'_>| {
        if input.is_empty() {
            return Ok(());
        }
        out.resource = Some(input.parse::<Type>().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected the indexed resource: write `#[indexer(Pod)]`",
            )
        })?);
        if input.is_empty() {
            return Ok(());
        }
        input.parse::<syn::Token![,]>()?;
        parse_entries(input, cx, "#[indexer(...)]", INDEXER_KEYS, |key, input| {
            match key.to_string().as_str() {
                NAME => once(
                    cx,
                    &mut out.name,
                    key,
                    value(key, input, "name = PodsByNode")?,
                ),
                CRATE => once(
                    cx,
                    &mut out.krate,
                    key,
                    value(key, input, "crate = ::informer::runtime")?,
                ),
                _ => unreachable!("every known key is handled"),
            }
            Ok(())
        });
        Ok(())
    };
    if let Err(e) = syn::parse::Parser::parse2(parser, args) {
        cx.syn_error(e);
    }
    out
}

/// The indexed type of the function's one argument, `&T` (checked).
fn check_signature<'a>(cx: &Ctxt, f: &'a ItemFn) -> Option<&'a Type> {
    let sig = &f.sig;
    if let Some(asyncness) = &sig.asyncness {
        cx.error_spanned_by(
            asyncness,
            "an indexer runs inside the cache's write lock and cannot be async: remove `async`",
        );
    }
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &sig.generics,
            "an indexer cannot be generic: write one per resource type",
        );
    }
    if let ReturnType::Default = sig.output {
        cx.error_spanned_by(
            &sig.ident,
            "an indexer returns the values the object is filed under: add `-> Vec<String>` (or `Option<String>`, `String`)",
        );
    }
    let mut inputs = sig.inputs.iter();
    let (first, second) = (inputs.next(), inputs.next());
    const ONE_ARGUMENT: &str = "an indexer takes exactly one argument, the object: write `fn name(obj: &Pod) -> Vec<String>`";
    let first = match (first, second) {
        (Some(first), None) => first,
        (_, Some(extra)) => {
            cx.error_spanned_by(extra, ONE_ARGUMENT);
            return None;
        }
        (None, None) => {
            cx.error_at(sig.paren_token.span.join(), ONE_ARGUMENT);
            return None;
        }
    };
    match first {
        FnArg::Receiver(r) => {
            cx.error_spanned_by(
                r,
                "an indexer is a free function, not a method: take the object as `obj: &Pod`",
            );
            None
        }
        FnArg::Typed(arg) => {
            match &*arg.ty {
                Type::Reference(r) if r.mutability.is_none() => Some(&r.elem),
                Type::Reference(r) => {
                    cx.error_spanned_by(r, "an indexer reads the object: take it by shared reference, `&T`, not `&mut T`");
                    None
                }
                other => {
                    let written = quote!(#other).to_string();
                    cx.error_spanned_by(
                        other,
                        format!("an indexer takes the object by reference: write `&{written}`"),
                    );
                    None
                }
            }
        }
    }
}

pub fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let f: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            cx.error_spanned_by(
                &item,
                "#[indexer(Resource)] goes on a function `fn(&Resource) -> Vec<String>`",
            );
            let errors = cx.into_compile_errors();
            return quote!(#errors #item);
        }
    };
    let args = parse_args(&cx, args);
    if args.resource.is_none() {
        cx.error_at(
            proc_macro2::Span::call_site(),
            format!(
                "name the indexed resource: write `#[indexer(Pod)]` above `fn {}`",
                f.sig.ident
            ),
        );
    }
    let arg_ty = check_signature(&cx, &f);
    let (Some(resource), Some(arg_ty), false) = (&args.resource, arg_ty, cx.has_errors()) else {
        let errors = cx.into_compile_errors();
        return quote!(#errors #f);
    };
    let krate = args
        .krate
        .unwrap_or_else(|| syn::parse_quote!(::informer::runtime));
    let vis = &f.vis;
    let fn_name = &f.sig.ident;
    let index = args.name.unwrap_or_else(|| {
        format_ident!(
            "{}",
            camel_case(&fn_name.to_string()),
            span = fn_name.span()
        )
    });
    let name = fn_name.to_string();
    let written = quote!(#resource).to_string().replace(' ', "");
    let doc = format!(
        "The index `{name}` of `{written}` objects, generated by `#[indexer]` from [`{name}`]: \
         read it with `Lister::<{written}>::by_index::<{index}>(value)`, or register it up front \
         with `index = [{index}]` beside `{written}` in `#[controller(...)]`."
    );
    // The call is spanned by the argument's type, so a resource that does not match the
    // function's argument is reported there; the conversion by the return type.
    let call = quote_spanned!(arg_ty.span()=> #fn_name(obj));
    let ret_span = match &f.sig.output {
        ReturnType::Type(_, ty) => ty.span(),
        ReturnType::Default => fn_name.span(),
    };
    let values = quote_spanned! {ret_span=>
        let values = #call;
        #krate::lister::IndexValues::into_index_values(values)
    };
    quote! {
        #f

        #[doc = #doc]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #index;

        impl #krate::lister::Index<#resource> for #index {
            const NAME: &'static str = ::core::concat!(::core::module_path!(), "::", #name);

            fn values(obj: &#resource) -> ::std::vec::Vec<::std::string::String> {
                #values
            }
        }
    }
}
