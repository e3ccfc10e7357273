//! Semantic checks of a parsed controller, each a small function; every failure is
//! recorded, none stops the others.

use std::collections::HashSet;
use std::time::Duration;

use quote::ToTokens;
use syn::{Data, DeriveInput, LitStr, Path};

use super::ast::{Controller, Namespace, NamespaceChoice, Related, Resource};
use crate::ctxt::Ctxt;
use crate::symbol::OWNS;

pub fn check(cx: &Ctxt, input: &DeriveInput, c: &Controller) {
    check_shape(cx, input);
    check_primary(cx, c);
    check_workers(cx, c);
    check_durations(cx, c);
    check_namespaces(cx, c);
    check_related(cx, c);
    check_index_names(cx, c);
    check_duplicates(cx, c);
    check_store(cx, c);
    check_status(cx, c);
    check_finalizer(cx, c);
}

fn check_shape(cx: &Ctxt, input: &DeriveInput) {
    match &input.data {
        Data::Struct(_) => {}
        Data::Enum(e) => cx.error_spanned_by(
            e.enum_token,
            "#[derive(ControllerSpec)] works on a struct: put the controller's state in a struct",
        ),
        Data::Union(u) => cx.error_spanned_by(
            u.union_token,
            "#[derive(ControllerSpec)] works on a struct: put the controller's state in a struct",
        ),
    }
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            "a derived controller cannot be generic: name concrete types, or implement `ControllerSpec` by hand",
        );
    }
}

fn check_primary(cx: &Ctxt, c: &Controller) {
    if c.primary.is_none() {
        cx.error_spanned_by(
            &c.ident,
            format!(
                "`{}` does not say which resource it reconciles: add `#[controller(for = Deployment)]` with your resource type",
                c.ident
            ),
        );
    }
}

fn check_workers(cx: &Ctxt, c: &Controller) {
    let Some(lit) = &c.workers else { return };
    match lit.base10_parse::<usize>() {
        Ok(0) => cx.error_spanned_by(
            lit,
            "a controller needs at least one worker: write `workers = 1` or more",
        ),
        Ok(_) => {}
        Err(e) => cx.error_spanned_by(lit, format!("`workers` must be a whole number: {e}")),
    }
}

fn check_durations(cx: &Ctxt, c: &Controller) {
    if let Some(resync) = &c.resync
        && resync.value < Duration::from_secs(1)
    {
        cx.error_spanned_by(
            &resync.lit,
            "a resync period must be at least 1s (leave `resync` out to never resync)",
        );
    }
    if let Some(timeout) = &c.timeout
        && timeout.value.is_zero()
    {
        cx.error_spanned_by(
            &timeout.lit,
            "a zero timeout would fail every reconcile: write a positive duration, or leave `timeout` out",
        );
    }
}

/// A namespace must be a DNS label (RFC 1123), as the API server requires.
fn valid_namespace(ns: &str) -> bool {
    !ns.is_empty()
        && ns.len() <= 63
        && ns
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !ns.starts_with('-')
        && !ns.ends_with('-')
}

fn check_namespace_lit(cx: &Ctxt, lit: &syn::LitStr) {
    let ns = lit.value();
    if !valid_namespace(&ns) {
        cx.error_spanned_by(
            lit,
            format!("{ns:?} is not a valid namespace: use lowercase letters, digits and '-' (at most 63), starting and ending with a letter or digit"),
        );
    }
}

fn check_namespaces(cx: &Ctxt, c: &Controller) {
    if let Some(Namespace::Lit(lit)) = &c.namespace {
        check_namespace_lit(cx, lit);
    }
    for r in &c.related {
        if let Some(NamespaceChoice::One(Namespace::Lit(lit))) = &r.namespace {
            check_namespace_lit(cx, lit);
        }
    }
}

/// `finalizer = ".."` must be a name the API server takes without a warning: a DNS subdomain,
/// `/`, and a name part (apimachinery's `IsQualifiedName`, with the domain its
/// `ValidateFinalizerName` warns about the lack of).
fn check_finalizer(cx: &Ctxt, c: &Controller) {
    let Some(lit) = &c.finalizer else { return };
    let name = lit.value();
    let Some((domain, rest)) = name.split_once('/') else {
        let example = if name.is_empty() { "cleanup" } else { &name };
        cx.error_spanned_by(
            lit,
            format!("a controller's finalizer needs a domain, so that no other writer uses the same name: write `finalizer = \"example.com/{example}\"` with a domain you own"),
        );
        return;
    };
    let label = |l: &str| {
        let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
        !l.is_empty()
            && l.starts_with(alnum)
            && l.ends_with(alnum)
            && l.chars().all(|c| alnum(c) || c == '-')
    };
    let domain_ok = domain.len() <= 253 && domain.split('.').all(label);
    let rest_ok = !rest.is_empty()
        && rest.len() <= 63
        && rest.starts_with(|c: char| c.is_ascii_alphanumeric())
        && rest.ends_with(|c: char| c.is_ascii_alphanumeric())
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !domain_ok {
        cx.error_spanned_by(
            lit,
            format!("{domain:?} is not a DNS subdomain: write the finalizer's domain in lowercase letters, digits, '-' and '.', as in `finalizer = \"example.com/cleanup\"`"),
        );
    } else if !rest_ok {
        cx.error_spanned_by(
            lit,
            format!("{rest:?} after the domain is not a valid name: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, as in `finalizer = \"{domain}/cleanup\"`"),
        );
    }
}

/// Whether an `index = [..]` entry is written as a function's name (`by_team`): a last
/// segment in lower case without generics. Such an entry is reported, and left out of the
/// expansion so that rustc does not report it again.
pub fn names_a_function(path: &Path) -> bool {
    path.segments.last().is_some_and(|last| {
        last.arguments.is_none()
            && last
                .ident
                .to_string()
                .starts_with(|ch: char| ch.is_ascii_lowercase())
    })
}

/// `index = [by_team]`: the indexer function's name where its index type (`ByTeam`) goes.
fn check_index_names(cx: &Ctxt, c: &Controller) {
    let primary = c.primary.iter().flat_map(|p| &p.indexes);
    let related = c.related.iter().flat_map(|r| &r.resource.indexes);
    for path in primary.chain(related) {
        let Some(last) = path.segments.last() else {
            continue;
        };
        if names_a_function(path) {
            let name = last.ident.to_string();
            let ty = crate::names::camel_case(&name);
            cx.error_spanned_by(
                path,
                format!("`index = [..]` lists index types, and `{name}` looks like the indexer function: write its type, `{ty}` (what `#[indexer]` on `fn {name}` generates, or its `name = ...`)"),
            );
        }
    }
}

fn check_related(cx: &Ctxt, c: &Controller) {
    let parent = c
        .primary
        .as_ref()
        .map_or_else(|| "Parent".to_string(), |p| short_name(&p.ty));
    for r in &c.related {
        check_one_related(cx, r, &parent);
    }
}

/// `parent`: the controller's resource as a reader would say it.
fn check_one_related(cx: &Ctxt, r: &Related, parent: &str) {
    let ty = short_name(&r.resource.ty);
    if r.is_watches() && r.mapper.is_none() && !r.had_unknown_key {
        let watched = match r.resource.metadata {
            Some(_) => format!("PartialObjectMeta<{ty}>"),
            None => ty.clone(),
        };
        let metadata = if r.resource.metadata.is_some() {
            ", metadata"
        } else {
            ""
        };
        cx.error_spanned_by(
            &r.keyword,
            format!("`watches({ty})` needs a mapper from a `{watched}` to the keys to reconcile: write `watches({ty}{metadata}, mapper = path::to::fn)` with `fn(&{watched}) -> Vec<ObjectKey>`"),
        );
    }
    if r.is_children() && r.from.is_none() && !r.had_unknown_key {
        cx.error_spanned_by(
            &r.keyword,
            format!("`children({ty})` needs the function that computes them: write `children({ty}, from = path::to::fn)` with `fn(&{parent}) -> Vec<{ty}>` (or `Option<{ty}>` for at most one, or a `Result` of either; add `&Context<Self>` as a second argument to read the context)"),
        );
    }
    if let (Some(mapper), false) = (&r.mapper, r.is_watches()) {
        cx.error_spanned_by(
            mapper,
            format!("`owns` maps each `{ty}` to its controlling owner; to map it yourself, write `watches({ty}, mapper = ...)`"),
        );
    }
}

/// The type as a reader would say it: `ConfigMap` for `k8s_openapi::api::core::v1::ConfigMap`.
fn short_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last().expect("a path has a segment");
            last.to_token_stream().to_string().replace(' ', "")
        }
        other => other.to_token_stream().to_string().replace(' ', ""),
    }
}

/// Every resource of the controller (the primary first, then the related ones in order),
/// with the name of its accessor.
pub fn resources(c: &Controller) -> Vec<(&Resource, String)> {
    c.primary
        .iter()
        .chain(c.related.iter().map(|r| &r.resource))
        .map(|r| (r, accessor_name(r)))
        .collect()
}

/// `ctx.<name>()`: `lister = name`, or the type's last segment as a snake_case plural.
pub fn accessor_name(r: &Resource) -> String {
    if let Some(lister) = &r.lister {
        return lister.to_string();
    }
    let last = match &r.ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    };
    let base = last.unwrap_or_else(|| "resource".to_owned());
    crate::names::plural(&crate::names::snake_case(&base))
}

/// The names `Context` answers itself: a lister named so would be hidden behind them.
const CONTEXT_METHODS: &[&str] = &["api", "client", "lister", "listers", "name", "queue"];

/// Where a resource is watched (the namespace, `None`: all, and the selectors) and why
/// (`for`, `owns` or `watches`): the same informer may feed the primary's own keys, owners'
/// keys and a mapper, each once.
#[derive(PartialEq, Eq)]
struct Watch {
    relation: String,
    ty: String,
    namespace: Option<String>,
    labels: Option<String>,
    fields: Option<String>,
}

/// The watch of the primary resource (index 0 of [`resources`]) and of each related one.
fn watches(c: &Controller) -> Vec<Watch> {
    let lit = |l: &Option<LitStr>| l.as_ref().map(LitStr::value);
    let controller_ns = c.namespace.as_ref().map(Namespace::scope);
    let ty = |r: &Resource| {
        let ty = r.ty.to_token_stream().to_string().replace(' ', "");
        match r.metadata {
            Some(_) => format!("metadata of {ty}"),
            None => ty,
        }
    };
    let primary = c.primary.iter().map(|p| Watch {
        relation: "for".to_owned(),
        ty: ty(p),
        namespace: controller_ns.clone(),
        labels: lit(&c.labels),
        fields: lit(&c.fields),
    });
    let related = c.related.iter().map(|r| Watch {
        relation: r.keyword.to_string(),
        // Children are watched through their controller's label too: never a plain watch.
        ty: if r.is_children() {
            format!("children {}", ty(&r.resource))
        } else {
            ty(&r.resource)
        },
        namespace: match &r.namespace {
            Some(NamespaceChoice::One(ns)) => Some(ns.scope()),
            Some(NamespaceChoice::All) => None,
            None => controller_ns.clone(),
        },
        labels: lit(&r.labels),
        fields: lit(&r.fields),
    });
    primary.chain(related).collect()
}

/// The type of the `children` declaration that makes `watch` (an `owns` of the same type,
/// where the two would be read through one accessor) redundant, either way round.
fn owns_beside_children(seen: &[Watch], watch: &Watch) -> Option<String> {
    let plain = |w: &Watch| w.ty.strip_prefix("children ").map(str::to_owned);
    let same_scope = |a: &Watch, b: &Watch| a.namespace == b.namespace;
    seen.iter().find_map(|earlier| {
        let pair = match (plain(earlier), plain(watch)) {
            (Some(ty), None) if watch.relation == OWNS && ty == watch.ty => Some(ty),
            (None, Some(ty)) if earlier.relation == OWNS && ty == earlier.ty => Some(ty),
            _ => None,
        };
        pair.filter(|_| same_scope(earlier, watch))
            .map(|ty| ty.rsplit("::").next().unwrap_or(&ty).to_owned())
    })
}

fn check_duplicates(cx: &Ctxt, c: &Controller) {
    let mut seen: Vec<Watch> = Vec::new();
    let mut children: HashSet<String> = HashSet::new();
    let mut accessors: HashSet<String> = HashSet::new();
    // Each index listed, and the type of the watch it was listed on.
    let mut indexes: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let resources = resources(c);
    for ((r, accessor), watch) in resources.iter().zip(watches(c)) {
        let name_target = || {
            r.lister
                .as_ref()
                .map_or(r.ty.to_token_stream(), |l| l.to_token_stream())
        };
        let is_children = watch.ty.starts_with("children ");
        let short = short_name(&r.ty);
        if is_children && !children.insert(watch.ty.clone()) {
            cx.error_spanned_by(
                &r.ty,
                format!("`children({short})` is declared twice; return every `{short}` child from one function"),
            );
        } else if seen.contains(&watch) {
            cx.error_spanned_by(
                &r.ty,
                format!("`{short}` is already watched this way by this controller, in the same namespace with the same selectors; merge the two (one `filter = f` can combine two filters with `Filter::or`), or give this watch another `namespace`, `all_namespaces`, `labels` or `fields`, and its own `lister = ...`"),
            );
        } else if !accessors.insert(accessor.clone()) {
            let advice = if let Some(children_of) = owns_beside_children(&seen, &watch) {
                format!(
                    "`children({children_of}, ..)` already watches its `{short}`s (a child that changes reconciles its parent): remove `owns({short})`, unless reconcile makes other `{short}`s itself; then give this watch its own name with `lister = ...`"
                )
            } else if seen.iter().any(|w| w.ty == watch.ty) {
                format!(
                    "`{short}` is watched twice; give this watch its own name with `lister = ...` (say `lister = other_{accessor}`)"
                )
            } else {
                "give one another name with `lister = ...`".to_owned()
            };
            cx.error_spanned_by(
                name_target(),
                format!("two resources would both be read through `ctx.{accessor}()`: {advice}"),
            );
        } else if CONTEXT_METHODS.contains(&accessor.as_str()) {
            cx.error_spanned_by(
                name_target(),
                format!("`ctx.{accessor}()` is the context's own method; name this lister otherwise with `lister = ...`"),
            );
        }
        seen.push(watch);
        for index in &r.indexes {
            let name = index.to_token_stream().to_string().replace(' ', "");
            match indexes.get(&name) {
                None => {
                    indexes.insert(name, short.clone());
                }
                Some(first) if *first == short => cx.error_spanned_by(
                    index,
                    format!("index `{name}` is listed twice; each index is registered once, list it once"),
                ),
                // An index indexes one type: on another type's watch, the type error that
                // follows says which (`{name}` does not index ...); say where it belongs.
                Some(first) => cx.error_spanned_by(
                    index,
                    format!("index `{name}` is listed on the `{first}` watch already; an index indexes one type: list it only on the watch of the type it indexes"),
                ),
            }
        }
    }
}

fn check_status(cx: &Ctxt, c: &Controller) {
    if let (Some(_), Some(primary)) = (&c.status, &c.primary)
        && let Some(metadata) = &primary.metadata
    {
        cx.error_spanned_by(
            metadata,
            "`status` is written from the full object, and `metadata` watches only its metadata; remove one of them",
        );
    }
}

fn check_store(cx: &Ctxt, c: &Controller) {
    if let (Some(_), Some(primary)) = (&c.store, &c.primary)
        && let Some(metadata) = &primary.metadata
    {
        cx.error_spanned_by(
            metadata,
            "`metadata` watches through the shared metadata informer and cannot fill a custom `store`; remove one of them",
        );
    }
}

#[cfg(test)]
mod tests;
