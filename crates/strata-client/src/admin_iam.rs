//! `strata admin user|group|policy|svcacct ...`: users, groups, policies and service accounts
//! through the admin API's `iam/` operations. Each prints a short text answer, or with `--json`
//! the API's JSON, for scripts.

use anyhow::{Context, Result};
use http::Method;
use serde_json::{json, Value};

use crate::admin::AdminConn;

fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// Output options shared by every IAM command.
#[derive(Debug, Clone, clap::Args)]
pub struct Out {
    #[command(flatten)]
    pub conn: AdminConn,
    /// Print the admin API's JSON answer.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum UserCommand {
    /// Add an enabled user with its access key and secret key.
    Add {
        #[arg(value_name = "ACCESS_KEY")]
        user: String,
        #[arg(value_name = "SECRET_KEY")]
        secret: String,
        #[command(flatten)]
        out: Out,
    },
    /// Remove a user, with its service accounts, sessions and group memberships.
    Remove {
        #[arg(value_name = "ACCESS_KEY")]
        user: String,
        #[command(flatten)]
        out: Out,
    },
    Enable {
        #[arg(value_name = "ACCESS_KEY")]
        user: String,
        #[command(flatten)]
        out: Out,
    },
    /// Refuse the user's keys (and its service accounts') at once.
    Disable {
        #[arg(value_name = "ACCESS_KEY")]
        user: String,
        #[command(flatten)]
        out: Out,
    },
    List {
        #[command(flatten)]
        out: Out,
    },
    /// A user's status, policies, groups and service accounts.
    Info {
        #[arg(value_name = "ACCESS_KEY")]
        user: String,
        #[command(flatten)]
        out: Out,
    },
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum GroupCommand {
    /// Add users to a group (made, enabled, if new).
    Add {
        group: String,
        #[arg(required = true)]
        members: Vec<String>,
        #[command(flatten)]
        out: Out,
    },
    /// Remove users from a group; with no users, remove the (empty) group.
    Remove {
        group: String,
        members: Vec<String>,
        #[command(flatten)]
        out: Out,
    },
    Enable {
        group: String,
        #[command(flatten)]
        out: Out,
    },
    /// The group's policies stop applying to its members at once.
    Disable {
        group: String,
        #[command(flatten)]
        out: Out,
    },
    List {
        #[command(flatten)]
        out: Out,
    },
    Info {
        group: String,
        #[command(flatten)]
        out: Out,
    },
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum PolicyCommand {
    /// Create or replace a named policy from a JSON file (AWS policy language).
    Create {
        name: String,
        file: std::path::PathBuf,
        #[command(flatten)]
        out: Out,
    },
    /// Remove a policy nothing is attached to.
    Remove {
        name: String,
        #[command(flatten)]
        out: Out,
    },
    /// Named and built-in policies.
    List {
        #[command(flatten)]
        out: Out,
    },
    /// A policy's document and what it is attached to.
    Info {
        name: String,
        #[command(flatten)]
        out: Out,
    },
    /// Attach policies to a user or a group.
    Attach(AttachArgs),
    /// Detach policies from a user or a group.
    Detach(AttachArgs),
}

#[derive(Debug, Clone, clap::Args)]
pub struct AttachArgs {
    #[arg(required = true)]
    pub policies: Vec<String>,
    #[arg(long, conflicts_with = "group", required_unless_present = "group")]
    pub user: Option<String>,
    #[arg(long)]
    pub group: Option<String>,
    #[command(flatten)]
    pub out: Out,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum SvcacctCommand {
    /// Add a service account of a user; its secret key is shown once.
    Add {
        parent: String,
        /// Choose the service account's access key (default: generated).
        #[arg(long)]
        key: Option<String>,
        /// Choose its secret key (default: generated).
        #[arg(long)]
        secret: Option<String>,
        /// A policy file that narrows the parent's rights.
        #[arg(long)]
        policy: Option<std::path::PathBuf>,
        /// The key stops working after this long (30m, 24h, ...).
        #[arg(long)]
        expires_in: Option<String>,
        #[command(flatten)]
        out: Out,
    },
    Remove {
        #[arg(value_name = "ACCESS_KEY")]
        key: String,
        #[command(flatten)]
        out: Out,
    },
    /// Let a disabled service account sign again.
    Enable {
        #[arg(value_name = "ACCESS_KEY")]
        key: String,
        #[command(flatten)]
        out: Out,
    },
    /// Stop one service account signing (its user and other keys keep working).
    Disable {
        #[arg(value_name = "ACCESS_KEY")]
        key: String,
        #[command(flatten)]
        out: Out,
    },
    /// Service accounts (of one user).
    List {
        parent: Option<String>,
        #[command(flatten)]
        out: Out,
    },
    Info {
        #[arg(value_name = "ACCESS_KEY")]
        key: String,
        #[command(flatten)]
        out: Out,
    },
}

fn print(out: &Out, answer: &Value, text: impl FnOnce(&Value) -> String) -> Result<()> {
    if out.json {
        println!("{}", serde_json::to_string_pretty(answer)?);
    } else {
        println!("{}", text(answer));
    }
    Ok(())
}

/// One line per entry of the answer's array `field`.
fn lines(answer: &Value, field: &str, line: impl Fn(&Value) -> String) -> String {
    answer[field].as_array().map(|a| a.iter().map(line).collect::<Vec<_>>().join("\n")).unwrap_or_default()
}

/// A call that sends no body (GET, DELETE, status changes).
async fn call(out: &Out, method: Method, path: &str, query: &str) -> Result<Value> {
    out.conn.call_body(method, path, query, String::new()).await
}

fn names(v: &Value) -> String {
    v.as_array().map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(",")).unwrap_or_default()
}

async fn status(out: &Out, op: &str, who: (&str, &str), enabled: bool) -> Result<()> {
    let word = if enabled { "enabled" } else { "disabled" };
    let query = format!("{}={}&status={word}", who.0, enc(who.1));
    let a = call(out, Method::POST, op, &query).await?;
    print(out, &a, |_| format!("{word} {}", who.1))
}

pub async fn user(cmd: UserCommand) -> Result<()> {
    let key = |k: &str| format!("accessKey={}", enc(k));
    match cmd {
        UserCommand::Add { user, secret, out } => {
            let body = json!({ "secretKey": secret }).to_string();
            let a = out.conn.call_body(Method::PUT, "iam/user", &key(&user), body).await?;
            print(&out, &a, |_| format!("added user {user}"))
        }
        UserCommand::Remove { user, out } => {
            let a = call(&out, Method::DELETE, "iam/user", &key(&user)).await?;
            print(&out, &a, |_| format!("removed user {user}"))
        }
        UserCommand::Enable { user, out } => {
            status(&out, "iam/user/status", ("accessKey", &user), true).await
        }
        UserCommand::Disable { user, out } => {
            status(&out, "iam/user/status", ("accessKey", &user), false).await
        }
        UserCommand::List { out } => {
            let a = call(&out, Method::GET, "iam/users", "").await?;
            print(&out, &a, |a| {
                let line = |u: &Value| {
                    format!(
                        "{}\t{}\tpolicies={}\tgroups={}",
                        u["accessKey"].as_str().unwrap_or("?"),
                        u["status"].as_str().unwrap_or("?"),
                        names(&u["policies"]),
                        names(&u["groups"])
                    )
                };
                lines(a, "users", line)
            })
        }
        UserCommand::Info { user, out } => {
            let a = call(&out, Method::GET, "iam/user", &key(&user)).await?;
            print(&out, &a, |u| {
                format!(
                    "user {user}: {}\n  policies: {}\n  groups: {}\n  service accounts: {}",
                    u["status"].as_str().unwrap_or("?"),
                    names(&u["policies"]),
                    names(&u["groups"]),
                    names(&u["serviceAccounts"])
                )
            })
        }
    }
}

pub async fn group(cmd: GroupCommand) -> Result<()> {
    let q = |g: &str| format!("group={}", enc(g));
    match cmd {
        GroupCommand::Add { group, members, out } => {
            let body = json!({ "members": members }).to_string();
            let a = out.conn.call_body(Method::POST, "iam/group/members", &q(&group), body).await?;
            print(&out, &a, |_| format!("added {} to group {group}", members.join(",")))
        }
        GroupCommand::Remove { group, members, out } => {
            let body = json!({ "members": members }).to_string();
            let a = out.conn.call_body(Method::DELETE, "iam/group/members", &q(&group), body).await?;
            let what = if members.is_empty() { "the group".to_owned() } else { members.join(",") };
            print(&out, &a, |_| format!("removed {what} from {group}"))
        }
        GroupCommand::Enable { group, out } => {
            status(&out, "iam/group/status", ("group", &group), true).await
        }
        GroupCommand::Disable { group, out } => {
            status(&out, "iam/group/status", ("group", &group), false).await
        }
        GroupCommand::List { out } => {
            let a = call(&out, Method::GET, "iam/groups", "").await?;
            print(&out, &a, |a| lines(a, "groups", group_line))
        }
        GroupCommand::Info { group, out } => {
            let a = call(&out, Method::GET, "iam/group", &q(&group)).await?;
            print(&out, &a, group_line)
        }
    }
}

fn group_line(g: &Value) -> String {
    format!(
        "{}\t{}\tmembers={}\tpolicies={}",
        g["group"].as_str().unwrap_or("?"),
        g["status"].as_str().unwrap_or("?"),
        names(&g["members"]),
        names(&g["policies"])
    )
}

pub async fn policy(cmd: PolicyCommand) -> Result<()> {
    let q = |n: &str| format!("name={}", enc(n));
    match cmd {
        PolicyCommand::Create { name, file, out } => {
            let doc =
                std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            let a = out.conn.call_body(Method::PUT, "iam/policy", &q(&name), doc).await?;
            print(&out, &a, |_| format!("created policy {name}"))
        }
        PolicyCommand::Remove { name, out } => {
            let a = call(&out, Method::DELETE, "iam/policy", &q(&name)).await?;
            print(&out, &a, |_| format!("removed policy {name}"))
        }
        PolicyCommand::List { out } => {
            let a = call(&out, Method::GET, "iam/policies", "").await?;
            print(&out, &a, |a| {
                let line = |p: &Value| {
                    let builtin = if p["builtin"].as_bool().unwrap_or(false) { "\tbuilt-in" } else { "" };
                    format!("{}{builtin}", p["name"].as_str().unwrap_or("?"))
                };
                lines(a, "policies", line)
            })
        }
        PolicyCommand::Info { name, out } => {
            let a = call(&out, Method::GET, "iam/policy", &q(&name)).await?;
            print(&out, &a, |p| {
                format!(
                    "policy {name}: users={} groups={}\n{}",
                    names(&p["users"]),
                    names(&p["groups"]),
                    serde_json::to_string_pretty(&p["document"]).unwrap_or_default()
                )
            })
        }
        PolicyCommand::Attach(args) => attach(args, "iam/policy/attach").await,
        PolicyCommand::Detach(args) => attach(args, "iam/policy/detach").await,
    }
}

async fn attach(args: AttachArgs, op: &str) -> Result<()> {
    let target = match (&args.user, &args.group) {
        (Some(u), _) => format!("user={}", enc(u)),
        (None, Some(g)) => format!("group={}", enc(g)),
        (None, None) => anyhow::bail!("name --user or --group"),
    };
    let query = format!("name={}&{target}", enc(&args.policies.join(",")));
    let a = call(&args.out, Method::POST, op, &query).await?;
    let verb = if op.ends_with("detach") { "detached" } else { "attached" };
    print(&args.out, &a, |_| format!("{verb} {}", args.policies.join(",")))
}

pub async fn svcacct(cmd: SvcacctCommand) -> Result<()> {
    let q = |k: &str| format!("accessKey={}", enc(k));
    match cmd {
        SvcacctCommand::Add { parent, key, secret, policy, expires_in, out } => {
            let policy = match policy {
                Some(f) => {
                    Some(std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?)
                }
                None => None,
            };
            let expiry = match expires_in {
                Some(d) => {
                    let d = strata_types::time::parse_duration(&d)
                        .with_context(|| format!("--expires-in {d} is not a duration like 30m or 24h"))?;
                    Some(strata_types::time::now_nanos() / 1_000_000_000 + d.as_secs())
                }
                None => None,
            };
            let body = json!({ "accessKey": key, "secretKey": secret, "policy": policy, "expiry": expiry });
            let query = format!("parent={}", enc(&parent));
            let a = out.conn.call_body(Method::PUT, "iam/svcacct", &query, body.to_string()).await?;
            print(&out, &a, |a| {
                format!(
                    "Access key: {}\nSecret key: {}\n(the secret key is not shown again)",
                    a["accessKey"].as_str().unwrap_or("?"),
                    a["secretKey"].as_str().unwrap_or("?")
                )
            })
        }
        SvcacctCommand::Remove { key, out } => {
            let a = call(&out, Method::DELETE, "iam/svcacct", &q(&key)).await?;
            print(&out, &a, |_| format!("removed service account {key}"))
        }
        SvcacctCommand::Enable { key, out } => {
            status(&out, "iam/svcacct/status", ("accessKey", &key), true).await
        }
        SvcacctCommand::Disable { key, out } => {
            status(&out, "iam/svcacct/status", ("accessKey", &key), false).await
        }
        SvcacctCommand::List { parent, out } => {
            let query = parent.map(|p| format!("parent={}", enc(&p))).unwrap_or_default();
            let a = call(&out, Method::GET, "iam/svcaccts", &query).await?;
            print(&out, &a, |a| lines(a, "serviceAccounts", svcacct_line))
        }
        SvcacctCommand::Info { key, out } => {
            let a = call(&out, Method::GET, "iam/svcacct", &q(&key)).await?;
            print(&out, &a, svcacct_line)
        }
    }
}

fn svcacct_line(s: &Value) -> String {
    let expiry = s["expiry"].as_u64().map(|e| format!("\texpires={e}")).unwrap_or_default();
    let narrowed = if s["policy"].is_null() { "" } else { "\tnarrowed" };
    format!(
        "{}\tparent={}\t{}{expiry}{narrowed}",
        s["accessKey"].as_str().unwrap_or("?"),
        s["parent"].as_str().unwrap_or("?"),
        s["status"].as_str().unwrap_or("?")
    )
}
