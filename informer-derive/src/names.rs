//! Names derived from the user's: accessor names from type names, and "did you mean".

/// `ReplicaSet` -> `replica_set`, `CSIDriver` -> `csi_driver`.
pub fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev = i.checked_sub(1).map(|p| chars[p]);
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                None => false,
                Some('_') => false,
                Some(p) if p.is_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_uppercase() => next.is_some_and(char::is_lowercase),
                Some(_) => false,
            };
            if boundary {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `by_owner` -> `ByOwner`.
pub fn camel_case(name: &str) -> String {
    name.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

/// The English plural of a snake_case resource name, as accessors use it:
/// `replica_set` -> `replica_sets`, `ingress` -> `ingresses`, `network_policy` ->
/// `network_policies`, `endpoints` -> `endpoints`.
pub fn plural(name: &str) -> String {
    let consonant_y = name.ends_with('y')
        && !name
            .chars()
            .rev()
            .nth(1)
            .is_some_and(|c| matches!(c, 'a' | 'e' | 'i' | 'o' | 'u'));
    if consonant_y {
        format!("{}ies", &name[..name.len() - 1])
    } else if ["ss", "sh", "ch", "x", "z"]
        .iter()
        .any(|s| name.ends_with(s))
    {
        format!("{name}es")
    } else if name.ends_with('s') {
        name.to_owned()
    } else {
        format!("{name}s")
    }
}

/// The known name closest to `unknown`, if it is close enough to be a typo.
pub fn did_you_mean<'a>(unknown: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (edit_distance(unknown, k), *k))
        .filter(|(d, k)| *d <= (k.len().max(unknown.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == cb {
                prev
            } else {
                1 + prev.min(row[j]).min(row[j + 1])
            };
            prev = current;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests;
