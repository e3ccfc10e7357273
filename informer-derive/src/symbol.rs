//! The attribute keys, named once (serde's `symbol.rs`).

// #[controller(...)]
pub const FOR: &str = "for";
pub const OWNS: &str = "owns";
pub const WATCHES: &str = "watches";
pub const CHILDREN: &str = "children";
pub const INDEX: &str = "index";
pub const WORKERS: &str = "workers";
pub const RESYNC: &str = "resync";
pub const TIMEOUT: &str = "timeout";
pub const NAMESPACE: &str = "namespace";
pub const LABELS: &str = "labels";
pub const FIELDS: &str = "fields";
pub const FILTER: &str = "filter";
pub const METADATA: &str = "metadata";
pub const QUEUE: &str = "queue";
pub const STORE: &str = "store";
pub const STATUS: &str = "status";
pub const VALIDATE: &str = "validate";
pub const FINALIZER: &str = "finalizer";
pub const KEEP_MANAGED_FIELDS: &str = "keep_managed_fields";
pub const READ_YOUR_WRITES: &str = "read_your_writes";
pub const NAME: &str = "name";
pub const LISTER: &str = "lister";
pub const CRATE: &str = "crate";

// owns(...) / watches(...)
pub const MAPPER: &str = "mapper";
// children(...)
pub const FROM: &str = "from";
pub const CREATE_ONLY: &str = "create_only";
pub const ALL_NAMESPACES: &str = "all_namespaces";

/// The keys `#[controller(...)]` accepts, in the order the docs list them.
pub const CONTROLLER_KEYS: &[&str] = &[
    FOR,
    OWNS,
    WATCHES,
    CHILDREN,
    STATUS,
    VALIDATE,
    FINALIZER,
    INDEX,
    WORKERS,
    RESYNC,
    TIMEOUT,
    NAMESPACE,
    LABELS,
    FIELDS,
    FILTER,
    METADATA,
    QUEUE,
    STORE,
    KEEP_MANAGED_FIELDS,
    READ_YOUR_WRITES,
    NAME,
    LISTER,
    CRATE,
];

/// The keys after the type in `owns(Type, ...)`.
pub const OWNS_KEYS: &[&str] = &[
    NAMESPACE,
    ALL_NAMESPACES,
    LABELS,
    FIELDS,
    FILTER,
    METADATA,
    INDEX,
    LISTER,
];

/// The keys after the type in `watches(Type, ...)`.
pub const WATCHES_KEYS: &[&str] = &[
    MAPPER,
    NAMESPACE,
    ALL_NAMESPACES,
    LABELS,
    FIELDS,
    FILTER,
    METADATA,
    INDEX,
    LISTER,
];

/// The keys after the type in `children(Type, ...)`.
pub const CHILDREN_KEYS: &[&str] = &[
    FROM,
    CREATE_ONLY,
    NAMESPACE,
    ALL_NAMESPACES,
    FILTER,
    INDEX,
    LISTER,
];

/// The keys of `#[indexer(Type, ...)]`.
pub const INDEXER_KEYS: &[&str] = &[NAME, CRATE];

/// "expected one of: `a`, `b`, `c`".
pub fn expected_one_of(keys: &[&str]) -> String {
    let list: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    format!("expected one of: {}", list.join(", "))
}
