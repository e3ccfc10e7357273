//! `#[derive(View)]` with `#[view(of = Resource)]`: a user's struct with the JSON shape of a
//! resource (a few of its fields) becomes a resource of that kind for informers, listers and
//! controllers: it implements `kube::Resource` with the kind, group, version and plural of
//! the full type, and `informer_runtime::view::View`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Path, Type};

use crate::ctxt::Ctxt;
use crate::parse::{once, parse_entries, value};
use crate::symbol::CRATE;

/// `#[view(of = ...)]`: the resource viewed.
const OF: &str = "of";

/// The keys `#[view(...)]` accepts.
const VIEW_KEYS: &[&str] = &[OF, CRATE];

/// The field every view must have, for the resource's `metadata`.
const METADATA: &str = "metadata";

#[derive(Default)]
struct Args {
    of: Option<Type>,
    krate: Option<Path>,
}

fn parse_args(cx: &Ctxt, input: &DeriveInput) -> Args {
    let mut args = Args::default();
    let mut seen = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("view")) {
        seen = true;
        let parser = |stream: ParseStream<'_>| {
            parse_entries(stream, cx, "#[view(...)]", VIEW_KEYS, |key, stream| {
                match key.to_string().as_str() {
                    OF => once(cx, &mut args.of, key, value(key, stream, "of = Pod")?),
                    CRATE => once(
                        cx,
                        &mut args.krate,
                        key,
                        value(key, stream, "crate = ::informer::runtime")?,
                    ),
                    _ => unreachable!("every known key is handled"),
                }
                Ok(())
            });
            Ok(())
        };
        if let Err(e) = attr.parse_args_with(parser) {
            cx.syn_error(e);
        }
    }
    if args.of.is_none() && !cx.has_errors() {
        let message = if seen {
            "name the viewed resource: write `#[view(of = Pod)]`"
        } else {
            "a view needs the resource it views: add `#[view(of = Pod)]` below `#[derive(View)]`"
        };
        cx.error_at(input.ident.span(), message);
    }
    args
}

/// The type of the `metadata` field (checked: a struct with named fields, not generic).
fn check_struct<'a>(cx: &Ctxt, input: &'a DeriveInput) -> Option<&'a Type> {
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            "a view cannot be generic: it has the one shape of the resource it views",
        );
    }
    let fields = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(named) => named,
            other => {
                cx.error_at(
                    if matches!(other, Fields::Unit) {
                        input.ident.span()
                    } else {
                        other.span()
                    },
                    "a view is a struct with named fields, the resource's JSON fields: \
                     at least `metadata: ObjectMeta`",
                );
                return None;
            }
        },
        Data::Enum(e) => {
            cx.error_spanned_by(
                e.enum_token,
                "a view is a struct with the resource's fields, not an enum",
            );
            return None;
        }
        Data::Union(u) => {
            cx.error_spanned_by(
                u.union_token,
                "a view is a struct with the resource's fields, not a union",
            );
            return None;
        }
    };
    let metadata = fields
        .named
        .iter()
        .find(|f| f.ident.as_ref().is_some_and(|i| i == METADATA));
    match metadata {
        Some(field) => Some(&field.ty),
        None => {
            cx.error_at(
                fields.brace_token.span.join(),
                "a view needs the object's metadata (its name, namespace and resource version \
                 key it in the cache): add `metadata: ObjectMeta`",
            );
            None
        }
    }
}

pub fn derive(input: DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let args = parse_args(&cx, &input);
    let metadata_ty = check_struct(&cx, &input);
    let (Some(of), Some(metadata_ty), false) = (&args.of, metadata_ty, cx.has_errors()) else {
        return cx.into_compile_errors();
    };
    let krate = args
        .krate
        .unwrap_or_else(|| syn::parse_quote!(::informer::runtime));
    let name = &input.ident;
    let private = quote!(#krate::view::__private);
    // Spanned by the user's tokens: a type that is not a resource is reported on `of = ...`,
    // a metadata field of the wrong type on that field's type.
    let resource = quote_spanned!(of.span()=> <#of as #private::Resource>);
    let meta = quote_spanned!(metadata_ty.span()=> &self.metadata);
    let meta_mut = quote_spanned!(metadata_ty.span()=> &mut self.metadata);
    let of_bound = quote_spanned!(of.span()=> type Of = #of;);
    quote! {
        impl #private::Resource for #name {
            type DynamicType = ();
            type Scope = #resource::Scope;

            fn kind(dt: &()) -> #private::Cow<'_, str> {
                #resource::kind(dt)
            }

            fn group(dt: &()) -> #private::Cow<'_, str> {
                #resource::group(dt)
            }

            fn version(dt: &()) -> #private::Cow<'_, str> {
                #resource::version(dt)
            }

            fn api_version(dt: &()) -> #private::Cow<'_, str> {
                #resource::api_version(dt)
            }

            fn plural(dt: &()) -> #private::Cow<'_, str> {
                #resource::plural(dt)
            }

            fn meta(&self) -> &#private::ObjectMeta {
                #meta
            }

            fn meta_mut(&mut self) -> &mut #private::ObjectMeta {
                #meta_mut
            }
        }

        impl #krate::view::View for #name {
            #of_bound
        }
    }
}
