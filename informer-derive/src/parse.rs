//! Attribute-list parsing shared by both macros: `key = value, flag, key(...)` with every
//! mistake recorded and parsing resumed at the next comma.

use proc_macro2::TokenTree;
use syn::Token;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};

use crate::ctxt::Ctxt;
use crate::names::did_you_mean;
use crate::symbol::expected_one_of;

/// Parses `key ..., key ...` entries, calling `on_key` for each known key (positioned after
/// the key). Unknown keys and values `on_key` fails on are recorded in `cx`, and parsing
/// goes on after the next top-level comma, so every mistake is reported at once. A key
/// close enough to a known one to be its typo is reported and then read as that key (its
/// value's own mistakes are not reported twice). Returns whether an unknown key (not such a
/// typo) was met.
pub fn parse_entries(
    input: ParseStream<'_>,
    cx: &Ctxt,
    what: &str,
    known: &[&str],
    mut on_key: impl FnMut(&syn::Ident, ParseStream<'_>) -> syn::Result<()>,
) -> bool {
    let mut unknown = false;
    while !input.is_empty() {
        let key = match input.call(syn::Ident::parse_any) {
            Ok(key) => key,
            Err(_) => {
                let tt: Option<TokenTree> = input.parse().ok();
                match tt {
                    Some(tt) => cx.error_spanned_by(
                        &tt,
                        format!("expected a key of {what}; {}", expected_one_of(known)),
                    ),
                    None => return true,
                }
                unknown = true;
                skip_to_comma(input);
                if skip_comma(input, cx).is_err() {
                    return unknown;
                }
                continue;
            }
        };
        let name = key.to_string();
        if known.contains(&name.as_str()) {
            if let Err(e) = on_key(&key, input) {
                cx.syn_error(e);
                skip_to_comma(input);
            } else if !input.is_empty() && !input.peek(Token![,]) {
                let tt: TokenTree = input.parse().expect("not empty");
                cx.error_spanned_by(&tt, format!("expected `,` after `{name}`"));
                skip_to_comma(input);
            }
        } else if let Some(hint) = habit_hint(&name, known) {
            cx.error_spanned_by(&key, format!("unknown key `{name}` in {what}; {hint}"));
            unknown = true;
            skip_to_comma(input);
        } else if let Some(guess) = did_you_mean(&name, known) {
            cx.error_spanned_by(
                &key,
                format!(
                    "unknown key `{name}` in {what}; did you mean `{guess}`? ({})",
                    expected_one_of(known)
                ),
            );
            // Read on as the key meant, so that the rest of the macro (and the code written
            // for it) sees what the user wrote, not a missing key: one error, not several.
            let meant = syn::Ident::new(guess, key.span());
            let _ = on_key(&meant, input);
            skip_to_comma(input);
        } else {
            cx.error_spanned_by(
                &key,
                format!("unknown key `{name}` in {what}; {}", expected_one_of(known)),
            );
            unknown = true;
            skip_to_comma(input);
        }
        if skip_comma(input, cx).is_err() {
            return unknown;
        }
    }
    unknown
}

/// What to write instead of a key that another controller library has (kube-runtime,
/// controller-runtime, java-operator-sdk) and that a typo guess would get wrong: `requeue`
/// is not a misspelt `queue`. Only for lists that have the key the hint names.
fn habit_hint(name: &str, known: &[&str]) -> Option<&'static str> {
    let (needs, hint): (&[&str], _) = match name {
        "requeue"
        | "requeue_after"
        | "requeue_period"
        | "reconcile_every"
        | "interval"
        | "max_reconciliation_interval" => (
            &["resync"],
            "to reconcile every object periodically, write `resync = \"5m\"`; for one \
             object, return `Action::requeue_after(d)` from its reconcile",
        ),
        "concurrency" | "max_concurrent_reconciles" | "max_concurrent" | "threads" => (
            &["workers"],
            "the number of reconciles run at once is `workers = N`",
        ),
        "generation_aware" | "generation_changed" => (
            &["filter"],
            "for generation-aware processing write `filter = f`, with \
             `fn f() -> Filter<T> { Filter::generation_changed() }`: changes of the status \
             alone then do not reconcile (a `resync` still does)",
        ),
        "depends_on" | "dependson" => (
            &["children", "from"],
            "declared children are applied in declaration order, each type even when \
             another failed; to make one wait for another, return it from its `from` \
             function only once the other is ready (read through the context's listers)",
        ),
        "reconcile_precondition" | "precondition" | "activation_condition" => (
            &["children", "from"],
            "a child is wanted while its `from` function returns it: return `None` (or \
             leave it out of the `Vec`) and it is deleted",
        ),
        _ => return None,
    };
    needs
        .iter()
        .any(|needed| known.contains(needed))
        .then_some(hint)
}

fn skip_to_comma(input: ParseStream<'_>) {
    while !input.is_empty() && !input.peek(Token![,]) {
        if input.parse::<TokenTree>().is_err() {
            return;
        }
    }
}

fn skip_comma(input: ParseStream<'_>, cx: &Ctxt) -> Result<(), ()> {
    if input.is_empty() {
        return Ok(());
    }
    match input.parse::<Token![,]>() {
        Ok(_) => Ok(()),
        Err(e) => {
            cx.syn_error(e);
            Err(())
        }
    }
}

/// `= value`.
pub fn value<T: Parse>(key: &syn::Ident, input: ParseStream<'_>, example: &str) -> syn::Result<T> {
    if !input.peek(Token![=]) {
        return Err(syn::Error::new(
            key.span(),
            format!("`{key}` needs a value: write `{example}`"),
        ));
    }
    input.parse::<Token![=]>()?;
    let written: Option<TokenTree> = input.fork().parse().ok();
    input.parse::<T>().map_err(|e| {
        // A const's name where a string goes: quoting the name is not the fix.
        if let Some(TokenTree::Ident(name)) = &written
            && example.contains('"')
            && is_const_name(&name.to_string())
        {
            return syn::Error::new(
                e.span(),
                format!(
                    "invalid value for `{key}`: write the string itself, `{example}`: the derive \
                     reads the attribute's tokens, not the value of a const such as `{name}`"
                ),
            );
        }
        let fix = written
            .as_ref()
            .and_then(|w| fix_of(key, w, example))
            .unwrap_or_else(|| example.to_string());
        syn::Error::new(
            e.span(),
            format!("invalid value for `{key}`: write `{fix}`"),
        )
    })
}

/// Whether `name` reads as a const's (`FINALIZER`, `NAME_2`): upper case, digits and `_`.
fn is_const_name(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// What the user meant by `written`, where `example` shows the value's form: a name where a
/// string goes is quoted (`name = mirror` → `name = "mirror"`), a string where a name goes
/// is unquoted (`lister = "copies"` → `lister = copies`).
fn fix_of(key: &syn::Ident, written: &TokenTree, example: &str) -> Option<String> {
    let wants_string = example.contains('"');
    let shown = example.split_once("= ").map_or(example, |(_, v)| v);
    // A flag or a number: the example is the fix.
    let wants_name = !wants_string
        && shown.starts_with(|c: char| c.is_alphabetic() || c == ':')
        && !matches!(shown, "true" | "false");
    match written {
        TokenTree::Ident(ident) if wants_string => Some(format!("{key} = \"{ident}\"")),
        TokenTree::Literal(lit) if wants_name => {
            let text = syn::parse_str::<syn::LitStr>(&lit.to_string())
                .ok()?
                .value();
            let is_name = syn::parse_str::<syn::Ident>(&text).is_ok();
            is_name.then(|| format!("{key} = {text}"))
        }
        _ => None,
    }
}

/// A flag: the key alone.
pub fn flag(key: &syn::Ident, input: ParseStream<'_>) -> syn::Result<()> {
    if input.peek(Token![=]) || input.peek(syn::token::Paren) {
        let tt: TokenTree = input.parse()?;
        return Err(syn::Error::new_spanned(
            tt,
            format!("`{key}` takes no value: write `{key}` alone"),
        ));
    }
    Ok(())
}

/// `= [Path, Path]` or `= Path`.
pub fn path_list(
    key: &syn::Ident,
    input: ParseStream<'_>,
    example: &str,
) -> syn::Result<Vec<syn::Path>> {
    if !input.peek(Token![=]) {
        return Err(syn::Error::new(
            key.span(),
            format!("`{key}` needs a value: write `{example}`"),
        ));
    }
    input.parse::<Token![=]>()?;
    if input.peek(syn::token::Bracket) {
        let content;
        syn::bracketed!(content in input);
        let paths = content.parse_terminated(syn::Path::parse_mod_style, Token![,])?;
        Ok(paths.into_iter().collect())
    } else {
        Ok(vec![input.parse()?])
    }
}

/// Records `key` as set, or an error if it was set before.
pub fn once<T>(cx: &Ctxt, slot: &mut Option<T>, key: &syn::Ident, value: T) {
    if slot.is_some() {
        cx.error_spanned_by(key, format!("`{key}` is given twice; keep one"));
    } else {
        *slot = Some(value);
    }
}
