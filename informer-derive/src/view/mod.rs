//! `#[derive(View)]` with `#[view(of = Resource)]`: a user's struct with the JSON shape of a
//! resource (a few of its fields) becomes a resource of that kind for informers, listers and
//! controllers: it implements `kube::Resource` with the kind, group, version and plural of
//! the full type, `informer_runtime::view::View`, `Deserialize` and `Serialize` (the struct's
//! own serde attributes kept; with `metadata(...)`, only the listed metadata fields decoded).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Path, Type};

use crate::ctxt::Ctxt;
use crate::names::did_you_mean;
use crate::parse::{once, parse_entries, value};
use crate::symbol::{CRATE, expected_one_of};

/// `#[view(of = ...)]`: the resource viewed.
const OF: &str = "of";

/// `#[view(metadata(...))]`: the metadata fields kept; also the field every view must have.
const METADATA: &str = "metadata";

/// The keys `#[view(...)]` accepts.
const VIEW_KEYS: &[&str] = &[OF, METADATA, CRATE];

/// The fields of `ObjectMeta` (Rust names), and their JSON names.
const META_FIELDS: &[(&str, &str)] = &[
    ("annotations", "annotations"),
    ("creation_timestamp", "creationTimestamp"),
    (
        "deletion_grace_period_seconds",
        "deletionGracePeriodSeconds",
    ),
    ("deletion_timestamp", "deletionTimestamp"),
    ("finalizers", "finalizers"),
    ("generate_name", "generateName"),
    ("generation", "generation"),
    ("labels", "labels"),
    ("managed_fields", "managedFields"),
    ("name", "name"),
    ("namespace", "namespace"),
    ("owner_references", "ownerReferences"),
    ("resource_version", "resourceVersion"),
    ("self_link", "selfLink"),
    ("uid", "uid"),
];

/// What every view keeps of its metadata: an informer keys objects by name and namespace and
/// orders them by resource version.
const ALWAYS_KEPT: &[&str] = &["name", "namespace", "resourceVersion"];

#[derive(Default)]
struct Args {
    of: Option<Type>,
    /// The metadata kept (`None`: all of it).
    metadata: Option<Kept>,
    krate: Option<Path>,
}

/// What `metadata(...)` keeps.
#[derive(Default)]
struct Kept {
    /// The JSON names of the metadata fields kept.
    fields: Vec<String>,
    /// `annotations("key", ...)`: the annotation keys kept (`None`: every one).
    annotations: Option<Vec<syn::LitStr>>,
    /// `labels("key", ...)`: the label keys kept (`None`: every one).
    labels: Option<Vec<syn::LitStr>>,
}

/// `(name, other_name, ...)`: the metadata fields kept, checked against `ObjectMeta`'s;
/// `annotations` and `labels` may list the keys kept: `annotations("example.com/ttl")`.
fn metadata_fields(cx: &Ctxt, key: &syn::Ident, input: ParseStream<'_>) -> syn::Result<Kept> {
    if !input.peek(syn::token::Paren) {
        return Err(syn::Error::new(
            key.span(),
            "list the metadata fields the view keeps: write `metadata(uid, labels)`",
        ));
    }
    let content;
    syn::parenthesized!(content in input);
    let known: Vec<&str> = META_FIELDS.iter().map(|(rust, _)| *rust).collect();
    let mut kept = Kept {
        fields: ALWAYS_KEPT.iter().map(|s| (*s).to_owned()).collect(),
        ..Kept::default()
    };
    while !content.is_empty() {
        let name: syn::Ident = content.parse()?;
        let written = name.to_string();
        if content.peek(syn::token::Paren) {
            let keys;
            syn::parenthesized!(keys in content);
            let keys: Vec<syn::LitStr> = keys
                .parse_terminated(|k| k.parse::<syn::LitStr>(), syn::Token![,])?
                .into_iter()
                .collect();
            match written.as_str() {
                "annotations" => kept.annotations = Some(keys),
                "labels" => kept.labels = Some(keys),
                _ => cx.error_spanned_by(
                    &name,
                    format!(
                        "only `annotations(\"key\", ..)` and `labels(\"key\", ..)` list keys; write `{written}` alone"
                    ),
                ),
            }
        }
        match META_FIELDS.iter().find(|(rust, _)| *rust == written) {
            Some((_, json)) if kept.fields.iter().any(|k| k == json) => {
                if !ALWAYS_KEPT.contains(json) {
                    cx.error_spanned_by(&name, format!("`{written}` is listed twice; keep one"));
                }
            }
            Some((_, json)) => kept.fields.push((*json).to_owned()),
            None => {
                let hint = match did_you_mean(&written, &known) {
                    Some(guess) => format!("; did you mean `{guess}`?"),
                    None => String::new(),
                };
                cx.error_spanned_by(
                    &name,
                    format!(
                        "`{written}` is not a field of ObjectMeta{hint} ({})",
                        expected_one_of(&known)
                    ),
                );
            }
        }
        if content.is_empty() {
            break;
        }
        content.parse::<syn::Token![,]>()?;
    }
    Ok(kept)
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
                    METADATA => once(
                        cx,
                        &mut args.metadata,
                        key,
                        metadata_fields(cx, key, stream)?,
                    ),
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

/// The named fields, and the type of the `metadata` field (checked: a struct with named
/// fields, not generic).
fn check_struct<'a>(cx: &Ctxt, input: &'a DeriveInput) -> Option<(&'a syn::FieldsNamed, &'a Type)> {
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
        Some(field) => Some((fields, &field.ty)),
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
    let checked = check_struct(&cx, &input);
    let (Some(of), Some((fields, metadata_ty)), false) = (&args.of, checked, cx.has_errors())
    else {
        return cx.into_compile_errors();
    };
    let krate = args
        .krate
        .unwrap_or_else(|| syn::parse_quote!(::informer::runtime));
    let name = &input.ident;
    let private = quote!(#krate::view::__private);
    // Spanned by the user's tokens: a type that is not a resource is reported on `of = ...`,
    // a metadata field of the wrong type on that field's type.
    let resource = quote_spanned!(of.span()=> <#of as #krate::kube::Resource>);
    let meta = quote_spanned!(metadata_ty.span()=> &self.metadata);
    let meta_mut = quote_spanned!(metadata_ty.span()=> &mut self.metadata);
    let of_bound = quote_spanned!(of.span()=> type Of = #of;);
    let deserialize = deserialize(&input, fields, args.metadata.as_ref(), &krate);
    let fields_exist = fields_exist(fields, of);
    quote! {
        #fields_exist

        impl #krate::kube::Resource for #name {
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

        #deserialize
    }
}

/// A check that each field of the view is one of the viewed resource's (its Rust name: the
/// field's own, or the snake case of the JSON name a `#[serde(rename = "...")]` gives it),
/// so that a misspelt field is rustc's "no field `stats` on type `Pod`" (with its "a field
/// with a similar name exists") on the field, not a field that silently stays `None`.
/// Fields the check cannot map (flattened, skipped, renamed to a keyword or a name no Rust
/// field has) are left out, and so is a field marked `#[view(unchecked)]`: one the JSON has
/// but the viewed type does not declare (a field newer than the crate of the type).
fn fields_exist(fields: &syn::FieldsNamed, of: &Type) -> TokenStream {
    let mut errors = TokenStream::new();
    let mut unchecked = |field: &syn::Field| {
        let mut found = false;
        for attr in field.attrs.iter().filter(|a| a.path().is_ident("view")) {
            let parsed = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("unchecked") {
                    found = true;
                    Ok(())
                } else {
                    Err(meta.error(
                        "unknown key in a field's #[view(...)]: write `#[view(unchecked)]` for a \
                         field the viewed type does not declare (a field newer than its crate)",
                    ))
                }
            });
            if let Err(e) = parsed {
                errors.extend(e.to_compile_error());
            }
        }
        found
    };
    let checks: Vec<TokenStream> = fields
        .named
        .iter()
        .filter(|field| !unchecked(field))
        .filter_map(|field| {
            let ident = field.ident.as_ref()?;
            if ident == METADATA {
                return None;
            }
            let (name, span) = match serde_rename(field)? {
                Some(json) => {
                    let name = crate::names::snake_case(&json.value());
                    (
                        syn::parse_str::<syn::Ident>(&name).ok()?.to_string(),
                        json.span(),
                    )
                }
                None => (ident.to_string(), ident.span()),
            };
            let name = syn::Ident::new(&name, span);
            Some(quote_spanned!(span=> let _ = &__of.#name;))
        })
        .collect();
    quote! {
        #errors
        const _: () = {
            #[allow(dead_code, clippy::no_effect_underscore_binding)]
            fn __informer_view_fields_are_the_resources(__of: &#of) {
                #(#checks)*
            }
        };
    }
}

/// The JSON name `#[serde(rename = "...")]` gives a field (`Some(None)`: none), or `None`
/// for a field the view's fields check leaves out (flattened or skipped).
fn serde_rename(field: &syn::Field) -> Option<Option<syn::LitStr>> {
    let mut rename = None;
    let mut left_out = false;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                if let Ok(value) = meta.value()
                    && let Ok(lit) = value.parse::<syn::LitStr>()
                {
                    rename = Some(lit);
                } else {
                    // `rename(deserialize = "...", serialize = "...")`: not mapped.
                    left_out = true;
                }
            } else if meta.path.is_ident("flatten")
                || meta.path.is_ident("skip")
                || meta.path.is_ident("skip_deserializing")
            {
                left_out = true;
            } else if let Ok(value) = meta.value() {
                // Another `key = value`: consume its value.
                let _ = value.parse::<syn::Expr>();
            }
            Ok(())
        });
    }
    (!left_out).then_some(rename)
}

/// `Deserialize` and `Serialize` for the view: serde's own derives on a shadow of the struct
/// (`remote`, so that they build and read the view itself), with the struct's serde
/// attributes, and the metadata decoded through `deserialize_metadata` when only some of its
/// fields are kept.
fn deserialize(
    input: &DeriveInput,
    fields: &syn::FieldsNamed,
    kept: Option<&Kept>,
    krate: &Path,
) -> TokenStream {
    let name = &input.ident;
    let private = quote!(#krate::view::__private);
    let serde_path = format!("{}::view::__private::serde", quote!(#krate)).replace(' ', "");
    let remote = name.to_string();
    let is_serde = |a: &&syn::Attribute| a.path().is_ident("serde");
    let container_attrs = input.attrs.iter().filter(is_serde);
    let shadow_fields = fields.named.iter().map(|f| {
        let ident = &f.ident;
        let ty = &f.ty;
        let attrs = f.attrs.iter().filter(is_serde);
        let projected = (kept.is_some() && ident.as_ref().is_some_and(|i| i == METADATA))
            .then(|| quote!(#[serde(deserialize_with = "__informer_view_metadata")]));
        quote!(#(#attrs)* #projected #ident: #ty)
    });
    let metadata_fn = kept.map(|kept| {
        let fields = &kept.fields;
        let keys = |list: &Option<Vec<syn::LitStr>>| match list {
            Some(keys) => quote!(::core::option::Option::Some(&[#(#keys),*])),
            None => quote!(::core::option::Option::None),
        };
        let (annotations, labels) = (keys(&kept.annotations), keys(&kept.labels));
        quote! {
            fn __informer_view_metadata<'de, D: #private::Deserializer<'de>>(
                deserializer: D,
            ) -> #private::Result<#private::ObjectMeta, D::Error> {
                #private::deserialize_metadata_keys(
                    deserializer,
                    &[#(#fields),*],
                    #annotations,
                    #labels,
                )
            }
        }
    });
    quote! {
        const _: () = {
            #metadata_fn

            #[derive(#private::Deserialize, #private::Serialize)]
            #[serde(crate = #serde_path, remote = #remote)]
            #(#container_attrs)*
            struct __InformerViewShadow {
                #(#shadow_fields,)*
            }

            impl<'de> #private::Deserialize<'de> for #name {
                fn deserialize<D: #private::Deserializer<'de>>(
                    deserializer: D,
                ) -> #private::Result<Self, D::Error> {
                    __InformerViewShadow::deserialize(deserializer)
                }
            }

            impl #private::Serialize for #name {
                fn serialize<S: #private::Serializer>(
                    &self,
                    serializer: S,
                ) -> #private::Result<S::Ok, S::Error> {
                    __InformerViewShadow::serialize(self, serializer)
                }
            }
        };
    }
}
