//! `#[derive(ControllerSpec)]` input parsed into a small IR. Parsing records mistakes in the
//! [`Ctxt`] and keeps going; [`super::check`] then validates what was parsed.

use std::time::Duration;

use syn::parse::ParseStream;
use syn::{DeriveInput, Expr, Ident, LitBool, LitInt, LitStr, Path, Type};

use crate::ctxt::Ctxt;
use crate::duration;
use crate::parse::{flag, once, parse_entries, path_list, value};
use crate::symbol::*;

/// A controller as the attributes describe it.
pub struct Controller {
    pub ident: Ident,
    pub vis: syn::Visibility,
    /// Path to `informer_runtime` (`crate = ...`; default `::informer::runtime`).
    pub krate: Path,
    /// `for = Type` (with `metadata`, `index`, `lister`).
    pub primary: Option<Resource>,
    pub related: Vec<Related>,
    pub namespace: Option<Namespace>,
    pub labels: Option<LitStr>,
    pub fields: Option<LitStr>,
    /// `filter = f`: `fn() -> Filter<Resource>`, which changes of the primary are queued.
    pub filter: Option<Path>,
    pub workers: Option<LitInt>,
    pub resync: Option<Spanned<Duration>>,
    pub timeout: Option<Spanned<Duration>>,
    pub queue: Option<QueueChoice>,
    pub store: Option<Path>,
    /// `status = f`: the primary's declared status.
    pub status: Option<Expr>,
    /// `validate = f`: the check of a live primary object before its children.
    pub validate: Option<Expr>,
    /// `finalizer = "example.com/cleanup"`: the finalizer the controller manages.
    pub finalizer: Option<LitStr>,
    pub keep_managed_fields: bool,
    /// `read_your_writes = false`: the read-your-own-writes gate is off.
    pub read_your_writes: Option<LitBool>,
    pub name: Option<LitStr>,
}

/// A value with the tokens it came from.
pub struct Spanned<T> {
    pub value: T,
    pub lit: LitStr,
}

/// A resource the controller watches, and how its cache is read.
pub struct Resource {
    /// The type as written (`Deployment`).
    pub ty: Type,
    /// `metadata`: only metadata is watched; the cache holds `PartialObjectMeta<ty>`.
    pub metadata: Option<Ident>,
    /// `index = [..]`: typed indexes registered on this resource's cache.
    pub indexes: Vec<Path>,
    /// `lister = name`: the accessor's name, instead of the type's plural.
    pub lister: Option<Ident>,
}

/// `owns(...)`, `watches(...)` or `children(...)`.
pub struct Related {
    /// The `owns` / `watches` / `children` keyword.
    pub keyword: Ident,
    pub resource: Resource,
    /// `mapper = f` (`watches`).
    pub mapper: Option<Expr>,
    /// `from = f` (`children`).
    pub from: Option<Expr>,
    /// `create_only` (`children`): create missing children, never change existing ones.
    pub create_only: Option<Ident>,
    pub namespace: Option<NamespaceChoice>,
    pub labels: Option<LitStr>,
    pub fields: Option<LitStr>,
    /// `filter = f`: `fn() -> Filter<T>` for the type watched (`PartialObjectMeta<T>` with
    /// `metadata`), which of its changes queue keys.
    pub filter: Option<Path>,
    /// Whether a key inside the parentheses was not understood (already reported): checks
    /// that would only repeat it, such as a missing `mapper` after a misspelt one, are
    /// skipped.
    pub had_unknown_key: bool,
}

impl Related {
    pub fn is_watches(&self) -> bool {
        self.keyword == WATCHES
    }

    pub fn is_children(&self) -> bool {
        self.keyword == CHILDREN
    }
}

pub enum NamespaceChoice {
    One(Namespace),
    All,
}

/// `namespace = "shop"`, or `namespace = f`: a function naming it when the controller is
/// built (`fn() -> String` or `fn(&Self) -> String`).
pub enum Namespace {
    Lit(LitStr),
    Fn(Path),
}

impl Namespace {
    /// What tells two watches' namespaces apart: the name, or the function's path.
    pub fn scope(&self) -> String {
        match self {
            Namespace::Lit(lit) => lit.value(),
            Namespace::Fn(path) => format!("fn {}", quote::ToTokens::to_token_stream(path)),
        }
    }
}

pub enum QueueChoice {
    /// `queue = "plain"`.
    Plain,
    /// `queue = "priority"`.
    Priority,
    /// `queue = path::to::fn`.
    Custom(Path),
}

impl Controller {
    /// Parses every `#[controller(...)]` attribute of `input`.
    pub fn from_ast(cx: &Ctxt, input: &DeriveInput) -> Self {
        let mut c = Controller {
            ident: input.ident.clone(),
            vis: input.vis.clone(),
            krate: syn::parse_quote!(::informer::runtime),
            primary: None,
            related: Vec::new(),
            namespace: None,
            labels: None,
            fields: None,
            filter: None,
            workers: None,
            resync: None,
            timeout: None,
            queue: None,
            store: None,
            status: None,
            validate: None,
            finalizer: None,
            keep_managed_fields: false,
            read_your_writes: None,
            name: None,
        };
        let mut primary_ty: Option<Type> = None;
        let mut metadata: Option<Ident> = None;
        let mut indexes: Option<Vec<Path>> = None;
        let mut lister: Option<Ident> = None;
        let mut krate: Option<Path> = None;
        let mut keep: Option<()> = None;
        for attr in &input.attrs {
            if !attr.path().is_ident("controller") {
                continue;
            }
            let parsed = attr.parse_args_with(|input: ParseStream<'_>| {
                parse_entries(
                    input,
                    cx,
                    "#[controller(...)]",
                    CONTROLLER_KEYS,
                    |key, input| {
                        match key.to_string().as_str() {
                            FOR => once(
                                cx,
                                &mut primary_ty,
                                key,
                                value(key, input, "for = Deployment")?,
                            ),
                            OWNS | WATCHES | CHILDREN => {
                                c.related.push(Related::parse(cx, key, input)?)
                            }
                            INDEX => once(
                                cx,
                                &mut indexes,
                                key,
                                path_list(key, input, "index = [ByOwner]")?,
                            ),
                            WORKERS => {
                                once(cx, &mut c.workers, key, value(key, input, "workers = 4")?)
                            }
                            RESYNC => {
                                let lit: LitStr = value(key, input, "resync = \"5m\"")?;
                                once(cx, &mut c.resync, key, duration_of(&lit)?)
                            }
                            TIMEOUT => {
                                let lit: LitStr = value(key, input, "timeout = \"30s\"")?;
                                once(cx, &mut c.timeout, key, duration_of(&lit)?)
                            }
                            NAMESPACE => {
                                once(cx, &mut c.namespace, key, parse_namespace(key, input)?)
                            }
                            LABELS => once(
                                cx,
                                &mut c.labels,
                                key,
                                value(key, input, "labels = \"app=web\"")?,
                            ),
                            FIELDS => once(
                                cx,
                                &mut c.fields,
                                key,
                                value(key, input, "fields = \"spec.nodeName=node-1\"")?,
                            ),
                            METADATA => {
                                flag(key, input)?;
                                once(cx, &mut metadata, key, key.clone())
                            }
                            QUEUE => once(cx, &mut c.queue, key, parse_queue(key, input)?),
                            STORE => once(
                                cx,
                                &mut c.store,
                                key,
                                value(key, input, "store = path::to::make_store")?,
                            ),
                            STATUS => once(
                                cx,
                                &mut c.status,
                                key,
                                value(key, input, "status = path::to::fn")?,
                            ),
                            VALIDATE => once(
                                cx,
                                &mut c.validate,
                                key,
                                value(key, input, "validate = path::to::fn")?,
                            ),
                            FINALIZER => once(
                                cx,
                                &mut c.finalizer,
                                key,
                                value(key, input, "finalizer = \"example.com/cleanup\"")?,
                            ),
                            KEEP_MANAGED_FIELDS => {
                                flag(key, input)?;
                                once(cx, &mut keep, key, ())
                            }
                            FILTER => once(
                                cx,
                                &mut c.filter,
                                key,
                                value(key, input, "filter = path::to::fn")?,
                            ),
                            READ_YOUR_WRITES => once(
                                cx,
                                &mut c.read_your_writes,
                                key,
                                value(key, input, "read_your_writes = false")?,
                            ),
                            NAME => once(
                                cx,
                                &mut c.name,
                                key,
                                value(key, input, "name = \"deployments\"")?,
                            ),
                            LISTER => once(
                                cx,
                                &mut lister,
                                key,
                                value(key, input, "lister = deployments")?,
                            ),
                            CRATE => once(
                                cx,
                                &mut krate,
                                key,
                                value(key, input, "crate = ::informer::runtime")?,
                            ),
                            _ => unreachable!("every known key is handled"),
                        }
                        Ok(())
                    },
                );
                Ok(())
            });
            if let Err(e) = parsed {
                cx.syn_error(e);
            }
        }
        if let Some(krate) = krate {
            c.krate = krate;
        }
        c.keep_managed_fields = keep.is_some();
        match primary_ty {
            Some(ty) => {
                c.primary = Some(Resource {
                    ty,
                    metadata,
                    indexes: indexes.unwrap_or_default(),
                    lister,
                })
            }
            None => {
                // Reported by the checks; keep the pieces that need a primary out of the way.
                for stray in metadata.iter().chain(lister.iter()) {
                    cx.error_spanned_by(
                        stray,
                        format!(
                            "`{stray}` applies to the primary resource; add `for = <Resource>`"
                        ),
                    );
                }
            }
        }
        c
    }
}

/// The resource named in one of [`Related::parse`]'s examples (`owns(ReplicaSet)`).
fn example_resource(example: &str) -> &str {
    let start = example.find('(').map_or(0, |i| i + 1);
    let rest = &example[start..];
    &rest[..rest.find([',', ')']).unwrap_or(rest.len())]
}

impl Related {
    fn parse(cx: &Ctxt, keyword: &Ident, input: ParseStream<'_>) -> syn::Result<Self> {
        let example = if keyword == WATCHES {
            "watches(ConfigMap, mapper = path::to::fn)"
        } else if keyword == CHILDREN {
            "children(ReplicaSet, from = path::to::fn)"
        } else {
            "owns(ReplicaSet)"
        };
        if !input.peek(syn::token::Paren) {
            // `owns = ConfigMap` (kube-runtime's and JOSDK's habit): show it the right way
            // round, with the user's own type.
            let fork = input.fork();
            let written = (fork.parse::<syn::Token![=]>().is_ok())
                .then(|| fork.parse::<Type>().ok())
                .flatten()
                .map(|ty| {
                    let ty = quote::ToTokens::to_token_stream(&ty).to_string();
                    let ty = ty
                        .replace(" :: ", "::")
                        .replace(" < ", "<")
                        .replace(" >", ">");
                    example.replacen(example_resource(example), &ty, 1)
                });
            let example = written.as_deref().unwrap_or(example);
            return Err(syn::Error::new(
                keyword.span(),
                format!("`{keyword}` takes the resource in parentheses: write `{example}`"),
            ));
        }
        let content;
        syn::parenthesized!(content in input);
        let ty: Type = content.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("expected a resource type: write `{example}`"),
            )
        })?;
        let mut related = Related {
            keyword: keyword.clone(),
            resource: Resource {
                ty,
                metadata: None,
                indexes: Vec::new(),
                lister: None,
            },
            mapper: None,
            from: None,
            create_only: None,
            namespace: None,
            labels: None,
            fields: None,
            filter: None,
            had_unknown_key: false,
        };
        if content.is_empty() {
            return Ok(related);
        }
        content.parse::<syn::Token![,]>()?;
        let what = format!("{keyword}(...)");
        let known = if keyword == WATCHES {
            WATCHES_KEYS
        } else if keyword == CHILDREN {
            CHILDREN_KEYS
        } else {
            OWNS_KEYS
        };
        let mut indexes: Option<Vec<Path>> = None;
        let unknown = parse_entries(&content, cx, &what, known, |key, input| {
            let r = &mut related;
            match key.to_string().as_str() {
                MAPPER => once(
                    cx,
                    &mut r.mapper,
                    key,
                    value(key, input, "mapper = path::to::fn")?,
                ),
                FROM => once(
                    cx,
                    &mut r.from,
                    key,
                    value(key, input, "from = path::to::fn")?,
                ),
                CREATE_ONLY => {
                    flag(key, input)?;
                    once(cx, &mut r.create_only, key, key.clone())
                }
                NAMESPACE => {
                    let ns = NamespaceChoice::One(parse_namespace(key, input)?);
                    once(cx, &mut r.namespace, key, ns)
                }
                ALL_NAMESPACES => {
                    flag(key, input)?;
                    once(cx, &mut r.namespace, key, NamespaceChoice::All)
                }
                LABELS => once(
                    cx,
                    &mut r.labels,
                    key,
                    value(key, input, "labels = \"app=web\"")?,
                ),
                FIELDS => once(
                    cx,
                    &mut r.fields,
                    key,
                    value(key, input, "fields = \"spec.nodeName=node-1\"")?,
                ),
                FILTER => once(
                    cx,
                    &mut r.filter,
                    key,
                    value(key, input, "filter = path::to::fn")?,
                ),
                METADATA => {
                    flag(key, input)?;
                    once(cx, &mut r.resource.metadata, key, key.clone())
                }
                INDEX => once(
                    cx,
                    &mut indexes,
                    key,
                    path_list(key, input, "index = [ByOwner]")?,
                ),
                LISTER => once(
                    cx,
                    &mut r.resource.lister,
                    key,
                    value(key, input, "lister = pods")?,
                ),
                _ => unreachable!("every known key is handled"),
            }
            Ok(())
        });
        related.resource.indexes = indexes.unwrap_or_default();
        related.had_unknown_key = unknown;
        Ok(related)
    }
}

fn duration_of(lit: &LitStr) -> syn::Result<Spanned<Duration>> {
    match duration::parse(&lit.value()) {
        Ok(value) => Ok(Spanned {
            value,
            lit: lit.clone(),
        }),
        Err(reason) => Err(syn::Error::new(
            lit.span(),
            format!(
                "malformed duration {:?}: {reason}; write a number and a unit (ms, s, m, h), such as \"30s\", \"5m\" or \"1h30m\"",
                lit.value()
            ),
        )),
    }
}

fn parse_namespace(key: &Ident, input: ParseStream<'_>) -> syn::Result<Namespace> {
    if input.peek(syn::Token![=]) && input.peek2(LitStr) {
        return Ok(Namespace::Lit(value(
            key,
            input,
            "namespace = \"default\"",
        )?));
    }
    let path: Path = value(key, input, "namespace = \"default\"")?;
    Ok(Namespace::Fn(path))
}

fn parse_queue(key: &Ident, input: ParseStream<'_>) -> syn::Result<QueueChoice> {
    const EXAMPLE: &str = "queue = \"priority\"";
    if input.peek(syn::Token![=]) && input.peek2(LitStr) {
        let lit: LitStr = value(key, input, EXAMPLE)?;
        return match lit.value().as_str() {
            "plain" => Ok(QueueChoice::Plain),
            "priority" => Ok(QueueChoice::Priority),
            other => Err(syn::Error::new(
                lit.span(),
                format!(
                    "unknown queue {other:?}: write `queue = \"plain\"`, `queue = \"priority\"`, or `queue = path::to::fn` for a queue of your own"
                ),
            )),
        };
    }
    let path: Path = value(key, input, EXAMPLE)?;
    Ok(QueueChoice::Custom(path))
}
