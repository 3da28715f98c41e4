//! MinIO's setting names. A deployment moving from MinIO keeps its environment file, systemd
//! unit and Helm values: every `MINIO_*` variable with a Strata equivalent is read as that
//! `STRATA_*` variable, one log line names each one used, a `STRATA_*` variable set to another
//! value wins (and the log says so), and each `MINIO_*` variable Strata has no use for gets a
//! warning rather than silence.
//!
//! [`adopt`] decides from the environment alone (so it is tested without touching the process's
//! environment); `main` applies its answer before the command line is read and before any thread
//! starts, so everything below sees only Strata's names.

/// What became of one `MINIO_*` variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// Read as `strata`.
    Used { minio: String, strata: String },
    /// `strata` is set to another value, and wins.
    Overridden { minio: String, strata: String },
    /// Strata has no equivalent; `hint` says what to do instead, when there is something.
    Unsupported { minio: String, hint: &'static str },
}

/// The outcome of [`adopt`]: variables to set, and what to log.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Adoption {
    pub set: Vec<(String, String)>,
    pub notes: Vec<Note>,
}

/// One-to-one names: MinIO's, Strata's. Several MinIO names may map to one Strata name (the
/// older `MINIO_ACCESS_KEY` and the newer `MINIO_ROOT_USER`); the first in this table that is
/// set wins.
const EXACT: &[(&str, &str)] = &[
    ("MINIO_ROOT_USER", "STRATA_ROOT_USER"),
    ("MINIO_ROOT_PASSWORD", "STRATA_ROOT_PASSWORD"),
    ("MINIO_ACCESS_KEY", "STRATA_ROOT_USER"),
    ("MINIO_SECRET_KEY", "STRATA_ROOT_PASSWORD"),
    ("MINIO_ROOT_USER_FILE", "STRATA_ROOT_USER_FILE"),
    ("MINIO_ROOT_PASSWORD_FILE", "STRATA_ROOT_PASSWORD_FILE"),
    ("MINIO_ACCESS_KEY_FILE", "STRATA_ROOT_USER_FILE"),
    ("MINIO_SECRET_KEY_FILE", "STRATA_ROOT_PASSWORD_FILE"),
    ("MINIO_ACCESS_KEY_OLD", "STRATA_ROOT_USER_OLD"),
    ("MINIO_SECRET_KEY_OLD", "STRATA_ROOT_PASSWORD_OLD"),
    ("MINIO_VOLUMES", "STRATA_VOLUMES"),
    ("MINIO_OPTS", "STRATA_OPTS"),
    ("MINIO_DOMAIN", "STRATA_DOMAIN"),
    ("MINIO_REGION", "STRATA_REGION"),
    ("MINIO_SITE_REGION", "STRATA_REGION"),
    ("MINIO_REGION_NAME", "STRATA_REGION"),
    ("MINIO_STORAGE_CLASS_STANDARD", "STRATA_STORAGE_CLASS_STANDARD"),
    ("MINIO_STORAGE_CLASS_RRS", "STRATA_STORAGE_CLASS_RRS"),
    ("MINIO_KMS_SECRET_KEY", "STRATA_KMS_SECRET_KEY"),
    ("MINIO_KMS_VAULT_ENDPOINT", "STRATA_KMS_VAULT_ENDPOINT"),
    ("MINIO_KMS_VAULT_KEY_NAME", "STRATA_KMS_VAULT_KEY_NAME"),
    ("MINIO_KMS_VAULT_CAPATH", "STRATA_KMS_VAULT_CAPATH"),
    ("MINIO_KMS_VAULT_TOKEN", "STRATA_KMS_VAULT_TOKEN"),
    ("MINIO_KMS_KES_ENDPOINT", "STRATA_KMS_KES_ENDPOINT"),
    ("MINIO_KMS_KES_KEY_NAME", "STRATA_KMS_KES_KEY_NAME"),
    ("MINIO_KMS_KES_CERT_FILE", "STRATA_KMS_KES_CERT_FILE"),
    ("MINIO_KMS_KES_KEY_FILE", "STRATA_KMS_KES_KEY_FILE"),
    ("MINIO_KMS_KES_API_KEY", "STRATA_KMS_KES_API_KEY"),
    ("MINIO_KMS_KES_CAPATH", "STRATA_KMS_KES_CAPATH"),
    ("MINIO_KMS_KES_KEY_PASSWORD", "STRATA_KMS_KES_KEY_PASSWORD"),
    ("MINIO_PROMETHEUS_AUTH_TYPE", "STRATA_PROMETHEUS_AUTH_TYPE"),
];

/// Families whose suffix is carried over (`MINIO_NOTIFY_NATS_ADDRESS_1` →
/// `STRATA_NOTIFY_NATS_ADDRESS_1`), with the suffixes Strata reads; others are unsupported.
struct Family {
    minio: &'static str,
    strata: &'static str,
    /// Whether Strata reads this suffix (after the prefix).
    reads: fn(&str) -> bool,
    hint: &'static str,
}

const FAMILIES: &[Family] = &[
    Family {
        minio: "MINIO_NOTIFY_",
        strata: "STRATA_NOTIFY_",
        reads: notify_suffix,
        hint: "Strata delivers to webhook and NATS targets (MINIO_NOTIFY_WEBHOOK_*, MINIO_NOTIFY_NATS_*)",
    },
    Family {
        minio: "MINIO_IDENTITY_OPENID_",
        strata: "STRATA_IDENTITY_OPENID_",
        reads: openid_suffix,
        hint: "Strata reads CONFIG_URL (or JWKS_URL and ISSUER), CLIENT_ID, CLAIM_NAME, CLIENT_SECRET, SCOPES, REDIRECT_URI and DISPLAY_NAME",
    },
];

fn notify_suffix(rest: &str) -> bool {
    let Some((kind, field)) = rest.split_once('_') else { return false };
    let field = |names: &[&str]| {
        names.iter().any(|n| field == *n || field.strip_prefix(n).is_some_and(|id| id.starts_with('_')))
    };
    match kind {
        "WEBHOOK" => field(&["ENABLE", "ENDPOINT", "AUTH_TOKEN"]),
        "NATS" => field(&["ENABLE", "ADDRESS", "SUBJECT", "USERNAME", "PASSWORD", "TOKEN"]),
        _ => false,
    }
}

fn openid_suffix(rest: &str) -> bool {
    matches!(
        rest,
        "CONFIG_URL"
            | "JWKS_URL"
            | "ISSUER"
            | "CLIENT_ID"
            | "CLAIM_NAME"
            | "CLIENT_SECRET"
            | "SCOPES"
            | "REDIRECT_URI"
            | "DISPLAY_NAME"
    )
}

/// Hints for MinIO settings Strata does not have, by prefix: the operator learns why rather
/// than guessing.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("MINIO_KMS_KES_ENCLAVE", "KES enclaves are KES Enterprise's; Strata uses the server's one key space"),
    ("MINIO_KMS_KES_", "Strata reads ENDPOINT, KEY_NAME, CERT_FILE, KEY_FILE, API_KEY and CAPATH"),
    ("MINIO_KMS_VAULT_", "Strata authenticates to Vault with a token: STRATA_KMS_VAULT_TOKEN or _TOKEN_FILE"),
    ("MINIO_BROWSER", "Strata's web console is always served: on --console-address, else on the S3 address under /_strata/console/"),
    ("MINIO_COMPRESSION_", "Strata does not compress objects"),
    ("MINIO_SCANNER_", "see STRATA_SCANNER_INTERVAL and STRATA_HEAL_PRIORITY in docs/operations.md"),
    ("MINIO_API_", "see STRATA_CONNECTIONS_MAX and the time-outs in docs/operations.md"),
    ("MINIO_PROMETHEUS_", "Strata's metrics need no Prometheus URL; see docs/metrics.md"),
    ("MINIO_STORAGE_CLASS_", "Strata reads STANDARD and RRS"),
    ("MINIO_", ""),
];

/// Decides, from the environment `vars`, which `STRATA_*` variables MinIO's names set.
pub fn adopt(vars: &[(String, String)]) -> Adoption {
    let get = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let mut adoption = Adoption::default();
    let mut minio: Vec<&(String, String)> = vars.iter().filter(|(k, _)| k.starts_with("MINIO_")).collect();
    // The table's order decides between two MinIO names for one Strata name.
    minio.sort_by_key(|(k, _)| (EXACT.iter().position(|(m, _)| m == k).unwrap_or(usize::MAX), k.clone()));
    for (name, value) in minio {
        let strata = match EXACT.iter().find(|(m, _)| m == name) {
            Some((_, s)) => Some((*s).to_owned()),
            None => FAMILIES.iter().find_map(|f| {
                let rest = name.strip_prefix(f.minio)?;
                (f.reads)(rest).then(|| format!("{}{rest}", f.strata))
            }),
        };
        let Some(strata) = strata else {
            let hint = FAMILIES
                .iter()
                .find(|f| name.starts_with(f.minio))
                .map(|f| f.hint)
                .or_else(|| UNSUPPORTED.iter().find(|(p, _)| name.starts_with(p)).map(|(_, h)| *h))
                .unwrap_or("");
            adoption.notes.push(Note::Unsupported { minio: name.clone(), hint });
            continue;
        };
        let chosen = adoption.set.iter().find(|(k, _)| *k == strata).map(|(_, v)| v.as_str());
        match get(&strata).or(chosen) {
            None => {
                adoption.set.push((strata.clone(), value.clone()));
                adoption.notes.push(Note::Used { minio: name.clone(), strata });
            }
            Some(v) if v == value => adoption.notes.push(Note::Used { minio: name.clone(), strata }),
            Some(_) => adoption.notes.push(Note::Overridden { minio: name.clone(), strata }),
        }
    }
    adoption
}

/// Applies [`adopt`] to this process's environment and, with `log`, logs each note. Call it
/// before any thread starts: it sets environment variables.
pub fn apply(log: bool) {
    let vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let adoption = adopt(&vars);
    for (name, value) in &adoption.set {
        std::env::set_var(name, value);
    }
    if !log {
        return;
    }
    for note in adoption.notes {
        match note {
            Note::Used { minio, strata } => tracing::info!("using MinIO's {minio} as {strata}"),
            Note::Overridden { minio, strata } => {
                tracing::warn!("{minio} is set, and so is {strata} with another value: {strata} wins")
            }
            Note::Unsupported { minio, hint: "" } => {
                tracing::warn!("{minio} has no Strata equivalent and is ignored")
            }
            Note::Unsupported { minio, hint } => {
                tracing::warn!("{minio} has no Strata equivalent and is ignored ({hint})")
            }
        }
    }
}

/// Splits `STRATA_OPTS` the way a shell would split an unquoted-and-quoted option string
/// (`--address ":9000" --console-address ':9001'`).
pub fn split_options(opts: &str) -> Result<Vec<String>, String> {
    shell_words::split(opts).map_err(|e| format!("STRATA_OPTS={opts:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn minio_names_become_strata_names() {
        let a = adopt(&env(&[
            ("MINIO_ROOT_USER", "admin"),
            ("MINIO_ROOT_PASSWORD", "secret-password"),
            ("MINIO_VOLUMES", "/mnt/disk{1...4}"),
            ("MINIO_NOTIFY_NATS_ADDRESS_PRIMARY", "127.0.0.1:4222"),
            ("MINIO_IDENTITY_OPENID_CONFIG_URL", "http://idp/.well-known/openid-configuration"),
            ("PATH", "/bin"),
        ]));
        let set: Vec<(&str, &str)> = a.set.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        for want in [
            ("STRATA_ROOT_USER", "admin"),
            ("STRATA_ROOT_PASSWORD", "secret-password"),
            ("STRATA_VOLUMES", "/mnt/disk{1...4}"),
            ("STRATA_NOTIFY_NATS_ADDRESS_PRIMARY", "127.0.0.1:4222"),
            ("STRATA_IDENTITY_OPENID_CONFIG_URL", "http://idp/.well-known/openid-configuration"),
        ] {
            assert!(set.contains(&want), "{want:?} not in {set:?}");
        }
        assert_eq!(a.set.len(), 5);
        assert!(a.notes.iter().all(|n| matches!(n, Note::Used { .. })), "{:?}", a.notes);
    }

    #[test]
    fn strata_wins_and_the_log_says_so() {
        let a = adopt(&env(&[
            ("MINIO_ROOT_USER", "minio-admin"),
            ("STRATA_ROOT_USER", "strata-admin"),
            ("MINIO_REGION", "eu-west-1"),
            ("STRATA_REGION", "eu-west-1"),
        ]));
        assert!(a.set.is_empty(), "{:?}", a.set);
        assert!(a.notes.contains(&Note::Overridden {
            minio: "MINIO_ROOT_USER".into(),
            strata: "STRATA_ROOT_USER".into()
        }));
        // The same value is no conflict.
        assert!(a
            .notes
            .contains(&Note::Used { minio: "MINIO_REGION".into(), strata: "STRATA_REGION".into() }));
    }

    #[test]
    fn the_newer_of_two_minio_names_wins() {
        let a = adopt(&env(&[("MINIO_ACCESS_KEY", "old-name"), ("MINIO_ROOT_USER", "new-name")]));
        assert_eq!(a.set, vec![("STRATA_ROOT_USER".to_owned(), "new-name".to_owned())]);
        assert!(a.notes.contains(&Note::Overridden {
            minio: "MINIO_ACCESS_KEY".into(),
            strata: "STRATA_ROOT_USER".into()
        }));
    }

    #[test]
    fn settings_without_an_equivalent_are_named() {
        let a = adopt(&env(&[
            ("MINIO_COMPRESSION_ENABLE", "on"),
            ("MINIO_NOTIFY_KAFKA_ENABLE_1", "on"),
            ("MINIO_KMS_KES_ENCLAVE", "tenant-1"),
            ("MINIO_IDENTITY_OPENID_ROLE_POLICY", "readonly"),
            ("MINIO_SOMETHING_NEW", "1"),
        ]));
        assert!(a.set.is_empty(), "{:?}", a.set);
        let unsupported: Vec<&str> = a
            .notes
            .iter()
            .filter_map(|n| match n {
                Note::Unsupported { minio, .. } => Some(minio.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(unsupported.len(), 5, "{:?}", a.notes);
        assert!(a.notes.iter().any(|n| matches!(n, Note::Unsupported { minio, hint }
            if minio == "MINIO_KMS_KES_ENCLAVE" && hint.contains("KES Enterprise"))));
    }

    #[test]
    fn every_name_read_is_documented() {
        let doc = include_str!("../../../docs/minio.md");
        for (minio, _) in EXACT {
            assert!(doc.contains(&format!("`{minio}`")), "docs/minio.md does not name {minio}");
        }
        for f in FAMILIES {
            assert!(doc.contains(f.minio), "docs/minio.md does not name {}", f.minio);
        }
    }

    #[test]
    fn options_split_like_a_shell() {
        assert_eq!(
            split_options(r#"--address ":9000" --console-address ':9001'"#).expect("split"),
            ["--address", ":9000", "--console-address", ":9001"]
        );
        assert!(split_options("--address \":9000").is_err());
    }
}
