//! `strata admin kms key create|list|rotate|enable|disable|status`: the deployment's KMS keys through the admin
//! API's `kms/` operations. Key material never leaves the server; these name and list keys.

use anyhow::Result;
use http::Method;
use serde_json::Value;

use crate::admin_iam::Out;

#[derive(Debug, Clone, clap::Subcommand)]
pub enum KmsCommand {
    /// Named keys: create, list, rotate, and the KMS's status.
    #[command(subcommand)]
    Key(KeyCommand),
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum KeyCommand {
    /// Create a named key (usable at once with SSE-KMS).
    Create {
        name: String,
        #[command(flatten)]
        out: Out,
    },
    /// Every key with the version new objects are sealed with.
    List {
        #[command(flatten)]
        out: Out,
    },
    /// Give a key a new version: new objects use it, existing ones keep reading (no rewrite).
    Rotate {
        name: String,
        #[command(flatten)]
        out: Out,
    },
    /// Make a disabled key usable again.
    Enable {
        name: String,
        #[command(flatten)]
        out: Out,
    },
    /// Disable a key: objects sealed under it can be neither written nor read until it is
    /// enabled again (the built-in KMS; an external KMS's keys are governed by its own policies).
    Disable {
        name: String,
        #[command(flatten)]
        out: Out,
    },
    /// Which KMS is configured, its default key, and whether it answers.
    Status {
        #[command(flatten)]
        out: Out,
    },
}

fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn print(out: &Out, answer: &Value, text: impl FnOnce(&Value) -> String) -> Result<()> {
    if out.json {
        println!("{}", serde_json::to_string_pretty(answer)?);
    } else {
        println!("{}", text(answer));
    }
    Ok(())
}

fn key_line(k: &Value) -> String {
    let state = if k["enabled"].as_bool().unwrap_or(true) { "enabled" } else { "disabled" };
    format!("{}\tversion={}\t{state}", k["name"].as_str().unwrap_or("?"), k["version"].as_u64().unwrap_or(0))
}

async fn set_enabled(out: &Out, op: &str, name: &str) -> Result<()> {
    let a = out.conn.call_body(Method::POST, op, &format!("name={}", enc(name)), String::new()).await?;
    print(out, &a, key_line)
}

pub async fn main(cmd: KmsCommand) -> Result<()> {
    let KmsCommand::Key(cmd) = cmd;
    match cmd {
        KeyCommand::Create { name, out } => {
            let a = out
                .conn
                .call_body(Method::POST, "kms/key/create", &format!("name={}", enc(&name)), String::new())
                .await?;
            print(&out, &a, |_| format!("created key {name}"))
        }
        KeyCommand::List { out } => {
            let a = out.conn.call_body(Method::GET, "kms/key/list", "", String::new()).await?;
            print(&out, &a, |a| {
                a["keys"]
                    .as_array()
                    .map(|k| k.iter().map(key_line).collect::<Vec<_>>().join("\n"))
                    .unwrap_or_default()
            })
        }
        KeyCommand::Rotate { name, out } => {
            let a = out
                .conn
                .call_body(Method::POST, "kms/key/rotate", &format!("name={}", enc(&name)), String::new())
                .await?;
            print(&out, &a, |a| format!("rotated {}", key_line(a)))
        }
        KeyCommand::Enable { name, out } => set_enabled(&out, "kms/key/enable", &name).await,
        KeyCommand::Disable { name, out } => set_enabled(&out, "kms/key/disable", &name).await,
        KeyCommand::Status { out } => {
            let a = out.conn.call_body(Method::GET, "kms/status", "", String::new()).await?;
            print(&out, &a, |a| {
                let online = if a["online"].as_bool().unwrap_or(false) { "online" } else { "OFFLINE" };
                let endpoint = a["endpoint"]
                    .as_str()
                    .filter(|e| !e.is_empty())
                    .map(|e| format!(" at {e}"))
                    .unwrap_or_default();
                format!(
                    "KMS: {}{endpoint}, {online}; default key {}",
                    a["kind"].as_str().unwrap_or("?"),
                    a["defaultKey"].as_str().unwrap_or("?")
                )
            })
        }
    }
}
