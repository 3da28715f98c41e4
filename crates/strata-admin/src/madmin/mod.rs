//! MinIO's admin API, under [`PREFIX`], as MinIO's `mc admin` client speaks it, so that
//! scripts written for MinIO keep working against Strata: the same paths, query parameters,
//! JSON shapes and status codes, and the same sealed bodies ([`strata_crypto::sio`]) where MinIO seals
//! them. Every operation maps onto Strata's own (the IAM state, the drives' health) and needs
//! the same `admin:` action as Strata's admin API ([`crate::iam`]).
//!
//! MinIO's client signs for the empty region, so requests here are verified against the region
//! their signature names.
//!
//! | method and path | sealed | does |
//! |---|---|---|
//! | `GET info` | | the deployment: servers, drives, erasure sets |
//! | `PUT add-user?accessKey=` | request | adds (or updates the secret of) a user |
//! | `DELETE remove-user?accessKey=` | | removes a user |
//! | `GET list-users` | answer | users with their policies, status and groups |
//! | `GET user-info?accessKey=` | | one user |
//! | `PUT set-user-status?accessKey=&status=` | | enables or disables a user |
//! | `PUT update-group-members` | | adds or removes group members (or an empty group) |
//! | `GET groups`, `GET group?group=` | | |
//! | `PUT set-group-status?group=&status=` | | |
//! | `PUT add-canned-policy?name=` (the document), `DELETE remove-canned-policy?name=` | | |
//! | `GET list-canned-policies`, `GET info-canned-policy?name=` | | |
//! | `POST idp/builtin/policy/attach`, `.../detach` | both | attaches or detaches policies |
//! | `PUT add-service-account` | both | adds a service account (of a user, or of the caller) |
//! | `GET list-service-accounts?user=`, `GET info-service-account?accessKey=` | answer | |
//! | `DELETE delete-service-account?accessKey=` (204), `POST update-service-account?accessKey=` (204) | request | |
//!
//! | `GET help-config-kv`, `GET get-config-kv?key=` | answer (get) | the settings MinIO names `region` and `storage_class`, read-only |
//! | `PUT set-config-kv` | request | refused: Strata's settings come from its environment |
//! | `POST background-heal/status` | | the healer: sets, drives, what it healed |
//! | `POST heal/[BUCKET[/PREFIX]]` | | starts a heal scan (`scanMode` 2: deep); with `clientToken=`, its progress |
//! | `POST service?action=restart\|stop` | | every node stops (or restarts) once its requests in flight are answered |
//! | `POST /minio/kms/v1/key/create?key-id=` | | a key in the configured KMS |
//! | `GET /minio/kms/v1/key/list?pattern=` | | keys whose names start with the pattern (`*`: all) |
//! | `GET /minio/kms/v1/key/status?key-id=` | | a data key generated and opened with the key (the default one when none is named) |
//!
//! Anything else is answered `501 NotImplemented` (never 503: MinIO's client retries those for
//! minutes).

mod logs;
mod perf;
mod pools;

use std::collections::BTreeMap;

use bytes::Bytes;
use http::{Method, StatusCode};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::{json, Value};
use strata_iam::state::{IamState, ServiceAccount, ServiceAccountChange, Status};
use strata_iam::{builtin, IamError, Target};
use strata_system::credentials::{random_string, ACCESS_KEY_ALPHABET, SECRET_ALPHABET};
use strata_types::limits::SERVICE_ACCOUNT_EXPIRY_MAX_SECS;

use crate::iam::{change, param, required, status, status_name};
use crate::{authorize_in, json_reply, Admin};
use strata_s3::body::ResponseBody;
use strata_s3::context::ServiceAction;
use strata_s3::error::{S3Error, S3ErrorCode};
use strata_s3::{Node, Reply};

pub const PREFIX: &str = "/minio/admin/v3/";
/// MinIO's KMS API (`mc admin kms key ...`), served here as operations `kms/...`.
pub const KMS_PREFIX: &str = "/minio/kms/v1/";

type Query = [(String, String)];

fn bad_body(why: impl std::fmt::Display) -> S3Error {
    S3Error::new(S3ErrorCode::InvalidArgument, &format!("the request body is not what was expected: {why}"))
}

/// The admin action a MinIO admin operation needs, as Strata's own admin API names it.
fn action(method: &Method, op: &str, query: &Query) -> Option<&'static str> {
    let enable = param(query, "status").is_some_and(|s| s.eq_ignore_ascii_case("enabled"));
    Some(match (method, op) {
        (&Method::GET, "info") => "admin:ServerInfo",
        (&Method::PUT, "add-user") => "admin:CreateUser",
        (&Method::DELETE, "remove-user") => "admin:DeleteUser",
        (&Method::GET, "list-users") => "admin:ListUsers",
        (&Method::GET, "user-info") => "admin:GetUser",
        (&Method::PUT, "set-user-status") if enable => "admin:EnableUser",
        (&Method::PUT, "set-user-status") => "admin:DisableUser",
        (&Method::PUT, "update-group-members") => "admin:AddUserToGroup",
        (&Method::GET, "groups") => "admin:ListGroups",
        (&Method::GET, "group") => "admin:GetGroup",
        (&Method::PUT, "set-group-status") if enable => "admin:EnableGroup",
        (&Method::PUT, "set-group-status") => "admin:DisableGroup",
        (&Method::PUT, "add-canned-policy") => "admin:CreatePolicy",
        (&Method::DELETE, "remove-canned-policy") => "admin:DeletePolicy",
        (&Method::GET, "list-canned-policies") => "admin:ListPolicies",
        (&Method::GET, "info-canned-policy") => "admin:GetPolicy",
        (&Method::POST, "idp/builtin/policy/attach") => "admin:AttachPolicy",
        (&Method::POST, "idp/builtin/policy/detach") => "admin:DetachPolicy",
        (&Method::PUT, "add-service-account") => "admin:CreateServiceAccount",
        (&Method::GET, "list-service-accounts" | "info-service-account") => "admin:ListServiceAccounts",
        (&Method::DELETE, "delete-service-account") => "admin:RemoveServiceAccount",
        (&Method::POST, "update-service-account") => "admin:UpdateServiceAccount",
        (&Method::GET, "get-config-kv" | "help-config-kv") => "admin:ConfigUpdate",
        (&Method::PUT, "set-config-kv") => "admin:ConfigUpdate",
        (&Method::POST, "background-heal/status") => "admin:Heal",
        (&Method::POST, o) if o == "heal" || o.starts_with("heal/") => "admin:Heal",
        (&Method::GET, "trace") => "admin:ServerTrace",
        (&Method::GET, "log") => "admin:ConsoleLog",
        (&Method::POST, "service") if param(query, "action") == Some("stop") => "admin:ServiceStop",
        (&Method::POST, "service") => "admin:ServiceRestart",
        (&Method::POST, "kms/key/create") => "admin:KMSCreateKey",
        (&Method::GET, "kms/key/list" | "kms/key/status") => "admin:KMSKeyStatus",
        (&Method::POST, o) if o == "speedtest" || o.starts_with("speedtest/") => "admin:Speedtest",
        (&Method::GET, "pools/list" | "pools/status") => "admin:Decommission",
        (&Method::POST, "pools/decommission" | "pools/cancel") => "admin:Decommission",
        (&Method::POST, "rebalance/start" | "rebalance/stop") | (&Method::GET, "rebalance/status") => {
            "admin:Rebalance"
        }
        _ => return None,
    })
}

/// The region a request's SigV4 scope names (`Credential=KEY/DATE/REGION/SERVICE/...`).
fn signed_region(parts: &http::request::Parts) -> Option<String> {
    let auth = parts.headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let credential = auth.split(['=', ',', ' ']).skip_while(|t| *t != "Credential").nth(1)?;
    credential.split('/').nth(2).map(str::to_owned)
}

/// Serves one request whose path starts with [`PREFIX`].
pub async fn serve(
    admin: &Admin,
    parts: &http::request::Parts,
    body: Incoming,
) -> (String, Result<Reply, S3Error>) {
    let node = admin.node.as_ref();
    let path = parts.uri.path();
    let op = match (path.strip_prefix(PREFIX), path.strip_prefix(KMS_PREFIX)) {
        (Some(op), _) => op.to_owned(),
        (None, Some(op)) => format!("kms/{op}"),
        (None, None) => String::new(),
    };
    let name = format!("MinioAdmin{}", op.split(['/', '-']).map(crate::capitalise).collect::<String>());
    let query = strata_s3::router::parse_query(parts.uri.query().unwrap_or(""));
    let Some(action) = action(&parts.method, &op, &query) else {
        let e = S3Error::new(
            S3ErrorCode::NotImplemented,
            &format!("Strata does not serve MinIO's admin operation {} {op}", parts.method),
        );
        return (name, Err(e));
    };
    let region = signed_region(parts).unwrap_or_else(|| node.config.region.clone());
    if op == "speedtest/client/devnull" {
        // An endless stream, signed as empty: authorized, then read and dropped, never held.
        let answer = match crate::authorize_caller(node, parts, Some(action), &region) {
            Ok(_) => perf::devnull(body).await,
            Err(e) => Err(e),
        };
        return (name, answer);
    }
    let authorized = match authorize_in(node, parts, Some(action), &region, body).await {
        Ok(a) => a,
        Err(e) => return (name, Err(e)),
    };
    let call = Call {
        node,
        parts,
        query: &query,
        body: &authorized.body,
        signer: &authorized.access_key,
        secret: &authorized.secret,
    };
    (name, call.run(admin, &op).await)
}

/// One authorized request.
struct Call<'a> {
    node: &'a Node,
    parts: &'a http::request::Parts,
    query: &'a Query,
    body: &'a Bytes,
    /// The signer's access key, and its secret key: sealed bodies are sealed with it.
    signer: &'a str,
    secret: &'a str,
}

impl Call<'_> {
    async fn run(&self, admin: &Admin, op: &str) -> Result<Reply, S3Error> {
        let node = self.node;
        let state = || node.iam.directory();
        match (&self.parts.method, op) {
            (&Method::GET, "info") => Ok(json_reply(StatusCode::OK, &info(admin, self.parts).await)),
            (&Method::PUT, "add-user") => {
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct NewUser {
                    secret_key: String,
                    #[serde(default)]
                    status: String,
                }
                let key = required(self.query, "accessKey")?;
                let new: NewUser = serde_json::from_slice(&self.open().await?).map_err(bad_body)?;
                if key == node.config.root_user {
                    return Err(IamError::AccessKeyInUse(key.to_owned()).into());
                }
                let disabled = new.status.eq_ignore_ascii_case("disabled");
                change(node, |s| {
                    if s.users.contains_key(key) {
                        s.set_user_secret(key, &new.secret_key)?;
                    } else {
                        s.add_user(key, &new.secret_key)?;
                    }
                    if disabled {
                        s.set_user_status(key, Status::Disabled)?;
                    }
                    Ok(())
                })
                .await?;
                Ok(empty())
            }
            (&Method::DELETE, "remove-user") => {
                let key = required(self.query, "accessKey")?;
                change(node, |s| s.remove_user(key)).await?;
                Ok(empty())
            }
            (&Method::GET, "list-users") => {
                let directory = state();
                let users: BTreeMap<&String, Value> =
                    directory.state().users.keys().map(|k| (k, user_info(directory.state(), k))).collect();
                let users = json!(users);
                self.sealed(&users).await
            }
            (&Method::GET, "user-info") => {
                let key = required(self.query, "accessKey")?;
                let directory = state();
                if !directory.state().users.contains_key(key) {
                    return Err(IamError::NoSuchUser(key.to_owned()).into());
                }
                Ok(json_reply(StatusCode::OK, &user_info(directory.state(), key)))
            }
            (&Method::PUT, "set-user-status") => {
                let (key, status) = (required(self.query, "accessKey")?, status(self.query)?);
                change(node, |s| s.set_user_status(key, status)).await?;
                Ok(empty())
            }
            (&Method::PUT, "update-group-members") => {
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct Update {
                    group: String,
                    #[serde(default)]
                    members: Option<Vec<String>>,
                    #[serde(default)]
                    is_remove: bool,
                }
                let u: Update = serde_json::from_slice(self.body).map_err(bad_body)?;
                let members = u.members.unwrap_or_default();
                let names: Vec<&str> = members.iter().map(String::as_str).collect();
                match (u.is_remove, names.is_empty()) {
                    (false, _) => change(node, |s| s.add_group_members(&u.group, &names)).await?,
                    (true, true) => change(node, |s| s.remove_group(&u.group)).await?,
                    (true, false) => change(node, |s| s.remove_group_members(&u.group, &names)).await?,
                }
                Ok(empty())
            }
            (&Method::GET, "groups") => {
                let names: Vec<String> = state().state().groups.keys().cloned().collect();
                Ok(json_reply(StatusCode::OK, &names))
            }
            (&Method::GET, "group") => {
                let name = required(self.query, "group")?;
                let directory = state();
                let Some(g) = directory.state().groups.get(name) else {
                    return Err(IamError::NoSuchGroup(name.to_owned()).into());
                };
                let reply = json!({
                    "name": name,
                    "status": status_name(g.status),
                    "members": g.members,
                    "policy": g.policies.iter().map(String::as_str).collect::<Vec<_>>().join(","),
                });
                Ok(json_reply(StatusCode::OK, &reply))
            }
            (&Method::PUT, "set-group-status") => {
                let (group, status) = (required(self.query, "group")?, status(self.query)?);
                change(node, |s| s.set_group_status(group, status)).await?;
                Ok(empty())
            }
            (&Method::PUT, "add-canned-policy") => {
                let name = required(self.query, "name")?;
                let document = std::str::from_utf8(self.body).map_err(bad_body)?;
                change(node, |s| s.set_policy(name, document)).await?;
                Ok(empty())
            }
            (&Method::DELETE, "remove-canned-policy") => {
                let name = required(self.query, "name")?;
                change(node, |s| s.remove_policy(name)).await?;
                Ok(empty())
            }
            (&Method::GET, "list-canned-policies") => {
                let directory = state();
                let mut all: BTreeMap<&str, Value> = BTreeMap::new();
                for (name, document) in builtin::BUILTIN.iter() {
                    all.insert(name, parse_document(document));
                }
                for (name, document) in &directory.state().policies {
                    all.insert(name, parse_document(document));
                }
                Ok(json_reply(StatusCode::OK, &all))
            }
            (&Method::GET, "info-canned-policy") => {
                let name = required(self.query, "name")?;
                let directory = state();
                let document = match directory.state().policies.get(name) {
                    Some(d) => d.as_str(),
                    None => builtin::document(name).ok_or_else(|| IamError::NoSuchPolicy(name.to_owned()))?,
                };
                let reply = match param(self.query, "v") {
                    Some("2") => json!({ "PolicyName": name, "Policy": parse_document(document) }),
                    _ => parse_document(document),
                };
                Ok(json_reply(StatusCode::OK, &reply))
            }
            (&Method::POST, "idp/builtin/policy/attach" | "idp/builtin/policy/detach") => {
                self.attach(op.ends_with("/attach")).await
            }
            (&Method::PUT, "add-service-account") => self.add_service_account().await,
            (&Method::GET, "list-service-accounts") => {
                let directory = state();
                let user = param(self.query, "user").filter(|u| !u.is_empty());
                let accounts: Vec<Value> = directory
                    .state()
                    .service_accounts
                    .iter()
                    .filter(|(_, s)| user.is_none_or(|u| s.parent == u))
                    .map(|(key, s)| {
                        let mut a = service_account(s);
                        a["accessKey"] = json!(key);
                        a.as_object_mut().map(|o| o.remove("policy"));
                        // Here MinIO's client reads the expiry unconditionally: 1970 is "none".
                        if a.get("expiration").is_none() {
                            a["expiration"] = json!(NO_EXPIRY);
                        }
                        a
                    })
                    .collect();
                let accounts = json!({ "accounts": accounts });
                self.sealed(&accounts).await
            }
            (&Method::GET, "info-service-account") => {
                let key = required(self.query, "accessKey")?;
                let directory = state();
                let s = directory
                    .state()
                    .service_accounts
                    .get(key)
                    .ok_or_else(|| IamError::NoSuchServiceAccount(key.to_owned()))?;
                let info = service_account(s);
                self.sealed(&info).await
            }
            (&Method::DELETE, "delete-service-account") => {
                let key = required(self.query, "accessKey")?;
                change(node, |s| s.remove_service_account(key)).await?;
                Ok(no_content())
            }
            (&Method::POST, "update-service-account") => self.update_service_account().await,
            (_, "kms/key/create" | "kms/key/list" | "kms/key/status") => self.kms(op).await,
            (&Method::GET, "help-config-kv") => {
                let keys: Vec<Value> = CONFIG_KEYS
                    .iter()
                    .map(|(key, description)| {
                        json!({ "key": key, "description": description, "optional": true, "type": "string", "multipleTargets": false })
                    })
                    .collect();
                let help = json!({ "subSys": "", "description": "", "multipleTargets": false, "keysHelp": keys });
                Ok(json_reply(StatusCode::OK, &help))
            }
            (&Method::GET, "get-config-kv") => {
                let mut text = String::new();
                for key in param(self.query, "key").unwrap_or("").split_whitespace() {
                    let subsys = key.split(':').next().unwrap_or(key);
                    match subsys {
                        "region" => text.push_str(&format!("region name={} \n", node.config.region)),
                        "storage_class" => {
                            let standard = standard_parity(node);
                            let rrs = node.config.rrs_parity.map_or(String::new(), |p| format!("EC:{p}"));
                            text.push_str(&format!("storage_class standard=EC:{standard} rrs={rrs} \n"));
                        }
                        other => {
                            return Err(S3Error::new(
                                S3ErrorCode::InvalidArgument,
                                &format!("unknown sub-system {other}"),
                            ))
                        }
                    }
                }
                self.sealed_text(text).await
            }
            (&Method::PUT, "set-config-kv") => Err(S3Error::new(
                S3ErrorCode::NotImplemented,
                "Strata reads its settings from its environment and flags (STRATA_REGION, STRATA_STORAGE_CLASS_STANDARD, ...; see docs/operations.md), not from a stored configuration: change them there and restart",
            )),
            (&Method::POST, "background-heal/status") => {
                Ok(json_reply(StatusCode::OK, &background_heal(node).await))
            }
            (&Method::POST, o) if o == "heal" || o.starts_with("heal/") => self.heal(o).await,
            (&Method::POST, "service") => self.service(admin).await,
            (&Method::GET, "trace") => self.trace(),
            (&Method::GET, "log") => logs::logs(node, self.query, here(self.parts)),
            (&Method::POST, "speedtest" | "speedtest/object") => perf::object(admin, self.query).await,
            (&Method::POST, "speedtest/client/devnull/extratime") => Ok(perf::extra_time()),
            (&Method::POST, "speedtest/net") => Err(perf::not_served("network")),
            (&Method::POST, "speedtest/drive") => Err(perf::not_served("drive")),
            (&Method::GET, "pools/list") => pools::list(self.node).await,
            (&Method::GET, "pools/status") => pools::status(self.node, required(self.query, "pool")?).await,
            (&Method::POST, "pools/decommission") => {
                pools::change(self.node, required(self.query, "pool")?, true).await
            }
            (&Method::POST, "pools/cancel") => pools::change(self.node, required(self.query, "pool")?, false).await,
            (&Method::POST, "rebalance/start") => pools::rebalance_start(self.node).await,
            (&Method::GET, "rebalance/status") => pools::rebalance_status_reply(self.node).await,
            (&Method::POST, "rebalance/stop") => pools::rebalance_stop(self.node).await,
            _ => Err(S3Error::new(S3ErrorCode::NotImplemented, "not served")),
        }
    }

    /// The request body, opened ([`strata_crypto::sio::open`]); a body that does not open is MinIO's
    /// `XMinioAdminConfigBadJSON` case, a 400.
    async fn open(&self) -> Result<Vec<u8>, S3Error> {
        let (secret, sealed) = (self.secret.to_owned(), self.body.clone());
        match one_at_a_time(move || strata_crypto::sio::open(&secret, &sealed)).await {
            Some(Ok(plain)) => Ok(plain),
            Some(Err(e)) => Err(S3Error::new(
                S3ErrorCode::InvalidRequest,
                &format!("The request body could not be opened with the signer's secret key: {e}"),
            )),
            None => Err(S3Error::new(S3ErrorCode::InternalError, "the body's key derivation did not run")),
        }
    }

    /// `value` as JSON, sealed for the signer.
    async fn sealed(&self, value: &Value) -> Result<Reply, S3Error> {
        self.sealed_bytes(serde_json::to_vec(value).unwrap_or_default()).await
    }

    /// `text`, sealed for the signer.
    async fn sealed_text(&self, text: String) -> Result<Reply, S3Error> {
        self.sealed_bytes(text.into_bytes()).await
    }

    async fn sealed_bytes(&self, plain: Vec<u8>) -> Result<Reply, S3Error> {
        let secret = self.secret.to_owned();
        let sealed = match one_at_a_time(move || strata_crypto::sio::seal(&secret, &plain)).await {
            Some(Ok(s)) => s,
            Some(Err(e)) => return Err(S3Error::new(S3ErrorCode::InternalError, &e.to_string())),
            None => {
                return Err(S3Error::new(S3ErrorCode::InternalError, "the body's key derivation did not run"))
            }
        };
        let mut r = Reply::empty(StatusCode::OK)
            .header("content-type", "application/octet-stream")
            .header("content-length", &sealed.len().to_string());
        r.body = ResponseBody::Full(Some(Bytes::from(sealed)));
        Ok(r)
    }

    async fn add_service_account(&self) -> Result<Reply, S3Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct NewAccount {
            #[serde(default)]
            access_key: String,
            #[serde(default)]
            secret_key: String,
            #[serde(default)]
            target_user: String,
            #[serde(default)]
            name: String,
            #[serde(default)]
            description: String,
            #[serde(default)]
            policy: Option<Value>,
            #[serde(default)]
            expiration: Option<String>,
        }
        let node = self.node;
        let new: NewAccount = serde_json::from_slice(&self.open().await?).map_err(bad_body)?;
        let parent = match new.target_user.as_str() {
            "" => self.signer.to_owned(),
            u => u.to_owned(),
        };
        if parent == node.config.root_user {
            return Err(S3Error::new(
                S3ErrorCode::InvalidArgument,
                "Strata's service accounts belong to IAM users: the root user has none. Make one for a user.",
            ));
        }
        let access_key = match new.access_key.as_str() {
            "" => random_string(ACCESS_KEY_ALPHABET, 20)?,
            k => k.to_owned(),
        };
        let secret_key = match new.secret_key.as_str() {
            "" => random_string(SECRET_ALPHABET, 40)?,
            s => s.to_owned(),
        };
        let policy = new.policy.filter(|p| !p.is_null()).map(|p| match p {
            Value::String(s) => s,
            other => other.to_string(),
        });
        let expiry = new.expiration.as_deref().map(expiry).transpose()?.flatten();
        let now = strata_types::time::now_nanos() / 1_000_000_000;
        if expiry.is_some_and(|e| e > now + SERVICE_ACCOUNT_EXPIRY_MAX_SECS) {
            return Err(S3Error::new(S3ErrorCode::InvalidArgument, "the expiry is more than a year away"));
        }
        if access_key == node.config.root_user {
            return Err(IamError::AccessKeyInUse(access_key).into());
        }
        let describe = ServiceAccountChange {
            name: Some(new.name.as_str()),
            description: Some(new.description.as_str()),
            ..Default::default()
        };
        change(node, |s| {
            s.add_service_account(&access_key, &secret_key, &parent, policy.as_deref(), expiry, now)?;
            s.update_service_account(&access_key, &describe, now)
        })
        .await?;
        let expiration =
            expiry.map_or(NO_EXPIRY.to_owned(), |e| strata_types::time::iso8601(e * 1_000_000_000));
        let reply = json!({ "credentials": { "accessKey": access_key, "secretKey": secret_key, "expiration": expiration } });
        self.sealed(&reply).await
    }

    async fn update_service_account(&self) -> Result<Reply, S3Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Update {
            #[serde(default)]
            new_policy: Option<Value>,
            #[serde(default)]
            new_secret_key: String,
            #[serde(default)]
            new_status: String,
            #[serde(default)]
            new_name: Option<String>,
            #[serde(default)]
            new_description: Option<String>,
            #[serde(default)]
            new_expiration: Option<String>,
        }
        let key = required(self.query, "accessKey")?;
        let u: Update = serde_json::from_slice(&self.open().await?).map_err(bad_body)?;
        let policy = u.new_policy.filter(|p| !p.is_null()).map(|p| match p {
            Value::String(s) => s,
            other => other.to_string(),
        });
        let status = match u.new_status.as_str() {
            "" => None,
            "on" | "enabled" => Some(Status::Enabled),
            "off" | "disabled" => Some(Status::Disabled),
            other => {
                return Err(S3Error::new(S3ErrorCode::InvalidArgument, &format!("unknown status {other:?}")));
            }
        };
        let now = strata_types::time::now_nanos() / 1_000_000_000;
        let expiry = u.new_expiration.as_deref().map(expiry).transpose()?.flatten();
        let update = ServiceAccountChange {
            secret: Some(u.new_secret_key.as_str()).filter(|s| !s.is_empty()),
            // An empty policy document (`{}`) removes the account's own policy.
            policy: policy.as_deref().map(|p| Some(p).filter(|p| !matches!(p.trim(), "" | "{}"))),
            status,
            expiry,
            name: u.new_name.as_deref(),
            description: u.new_description.as_deref(),
        };
        change(self.node, |s| s.update_service_account(key, &update, now)).await?;
        Ok(no_content())
    }

    /// MinIO's `mc admin kms key create|list|status` over Strata's configured KMS.
    async fn kms(&self, op: &str) -> Result<Reply, S3Error> {
        let Some(kms) = &self.node.kms else {
            return Err(S3Error::new(
                S3ErrorCode::NotImplemented,
                "No KMS is configured (set STRATA_KMS_SECRET_KEY, or STRATA_KMS_VAULT_ENDPOINT).",
            ));
        };
        let key_id = param(self.query, "key-id").unwrap_or("");
        match op {
            "kms/key/create" => {
                let key = required(self.query, "key-id")?;
                kms.create_key(key).await?;
                Ok(empty())
            }
            "kms/key/list" => {
                let pattern = param(self.query, "pattern").unwrap_or("");
                let prefix = pattern.trim_end_matches('*');
                let keys: Vec<Value> = kms
                    .list_keys()
                    .await?
                    .iter()
                    .filter(|k| k.name.starts_with(prefix))
                    .map(|k| {
                        json!({
                            "name": k.name,
                            "createdAt": strata_types::time::iso8601(k.created.saturating_mul(1_000_000_000)),
                            "createdBy": "",
                        })
                    })
                    .collect();
                Ok(json_reply(StatusCode::OK, &keys))
            }
            _ => {
                let key = if key_id.is_empty() { kms.default_key_id().to_owned() } else { key_id.to_owned() };
                let context = b"mc admin kms key status";
                let mut answer = json!({ "key-id": key });
                match kms.generate_key(&key, context).await {
                    Ok(generated) => match kms.decrypt_key(&key, &generated.ciphertext, context).await {
                        Ok(opened)
                            if strata_sign::constant_time_eq(opened.as_bytes(), generated.key.as_bytes()) => {
                        }
                        Ok(_) => answer["decryption-error"] = json!("the key opened is not the key sealed"),
                        Err(e) => answer["decryption-error"] = json!(e.to_string()),
                    },
                    Err(e) => answer["encryption-error"] = json!(e.to_string()),
                }
                Ok(json_reply(StatusCode::OK, &answer))
            }
        }
    }

    /// `mc admin heal ALIAS/BUCKET[/PREFIX]`: a heal scan of that scope, then its progress,
    /// polled with the scan's number as the client token.
    /// `mc admin service restart|stop`: every node is asked, this one last; each stops once the
    /// requests in flight (this answer first) are answered, and a restart starts the process
    /// again with its command line. `dry-run=true` only lists the nodes.
    async fn service(&self, admin: &Admin) -> Result<Reply, S3Error> {
        let (action, name) = match param(self.query, "action") {
            Some("restart") => (ServiceAction::Restart, "restart"),
            Some("stop") => (ServiceAction::Stop, "stop"),
            other => {
                return Err(S3Error::new(
                    S3ErrorCode::NotImplemented,
                    &format!(
                        "Strata does not serve the service action {:?}: it restarts and stops",
                        other.unwrap_or("")
                    ),
                ))
            }
        };
        let dry_run = param(self.query, "dry-run") == Some("true");
        let here = here(self.parts);
        let mut results = vec![json!({ "host": here })];
        if let Some(peers) = &admin.peers {
            if dry_run {
                results.extend(peers.names().into_iter().map(|host| json!({ "host": host })));
            } else {
                for (host, answer) in peers.service(action == ServiceAction::Restart).await {
                    results.push(match answer {
                        Ok(()) => json!({ "host": host }),
                        Err(e) => json!({ "host": host, "err": e.to_string() }),
                    });
                }
            }
        }
        if !dry_run {
            tracing::info!(?action, signer = %self.signer, "asked through the admin API");
            self.node.service.request_after_answer(action);
        }
        Ok(json_reply(StatusCode::OK, &json!({ "action": name, "dryRun": dry_run, "results": results })))
    }

    /// `mc admin trace`: this node's S3 requests as they are answered, one JSON object a line
    /// (MinIO's `TraceInfo`), a space every second while there is none, until the client goes
    /// away or the server stops. `err=true` keeps only errors, `threshold=` only requests that
    /// took at least that long; traces of other kinds than S3 are not kept, so asking only for
    /// those streams keep-alives alone.
    fn trace(&self) -> Result<Reply, S3Error> {
        let flag = |name: &str| param(self.query, name) == Some("true");
        let (errors_only, s3) = (flag("err"), flag("s3"));
        let threshold = match param(self.query, "threshold") {
            Some(t) => go_duration(t).ok_or_else(|| {
                S3Error::new(
                    S3ErrorCode::InvalidArgument,
                    &format!("threshold {t:?} is not a duration like 100ms"),
                )
            })?,
            None => std::time::Duration::ZERO,
        };
        let host = here(self.parts);
        let mut watcher = self.node.trace.watch();
        let (tx, rx) = tokio::sync::mpsc::channel(strata_types::limits::TRACE_QUEUE_ENTRIES);
        tokio::spawn(async move {
            // Asked for as the server stops: the stream ends at once.
            if *watcher.closed.borrow_and_update() {
                return;
            }
            let mut keepalive = tokio::time::interval(strata_types::limits::TRACE_KEEPALIVE);
            loop {
                let line = tokio::select! {
                    entry = watcher.entries.recv() => match entry {
                        Ok(e) if s3 && (!errors_only || e.status >= 400) && e.duration >= threshold => {
                            let mut line = trace_json(&e, &host).to_string();
                            line.push('\n');
                            Bytes::from(line)
                        }
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                    },
                    _ = keepalive.tick() => Bytes::from_static(b" "),
                    _ = watcher.closed.changed() => break,
                };
                if tx.send(Ok(line)).await.is_err() {
                    break; // the client went away
                }
            }
        });
        Ok(event_stream(rx))
    }

    async fn heal(&self, op: &str) -> Result<Reply, S3Error> {
        let layer = &self.node.layer;
        if let Some(token) = param(self.query, "clientToken") {
            let id: u64 = token
                .parse()
                .map_err(|_| S3Error::new(S3ErrorCode::InvalidArgument, "unknown heal client token"))?;
            let status = layer.heal_status().await;
            let scan = &status.scan;
            let done = scan.id > id || (scan.id == id && scan.state == "idle");
            let detail = if scan.id == id {
                format!(
                    "{} objects scanned, {} healed, {} failed",
                    scan.objects_scanned, scan.objects_healed, scan.objects_failed
                )
            } else {
                String::new()
            };
            let reply = json!({
                "summary": if done { "finished" } else { "running" },
                "detail": detail,
                "startTime": strata_types::time::iso8601(scan.started.saturating_mul(1_000_000_000)),
                "items": [],
            });
            return Ok(json_reply(StatusCode::OK, &reply));
        }
        if param(self.query, "forceStop") == Some("true") {
            return Err(S3Error::new(
                S3ErrorCode::NotImplemented,
                "Strata's heal scans run to their end; there is nothing to stop",
            ));
        }
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct HealOpts {
            #[serde(default)]
            scan_mode: u8,
        }
        let opts: HealOpts = if self.body.is_empty() {
            HealOpts::default()
        } else {
            serde_json::from_slice(self.body).map_err(bad_body)?
        };
        let scope = op.strip_prefix("heal").unwrap_or("").trim_start_matches('/');
        let (bucket, prefix) = scope.split_once('/').unwrap_or((scope, ""));
        let bucket = Some(bucket.to_owned()).filter(|b| !b.is_empty());
        if let Some(b) = &bucket {
            layer.bucket_info(b)?;
        }
        let scope = strata_object::HealScope { bucket, prefix: prefix.to_owned(), deep: opts.scan_mode == 2 };
        let id = match layer.start_heal_scan(scope) {
            strata_object::ScanStart::Started(id) | strata_object::ScanStart::Queued(id) => id,
        };
        let client = self
            .parts
            .extensions
            .get::<strata_s3::context::ConnInfo>()
            .and_then(|c| c.peer)
            .map(|p| p.ip().to_string())
            .unwrap_or_default();
        let now = strata_types::time::iso8601(strata_types::time::now_nanos());
        let reply = json!({ "clientToken": id.to_string(), "clientAddress": client, "startTime": now });
        Ok(json_reply(StatusCode::OK, &reply))
    }

    async fn attach(&self, attach: bool) -> Result<Reply, S3Error> {
        #[derive(Deserialize)]
        struct Association {
            #[serde(default)]
            policies: Vec<String>,
            #[serde(default)]
            user: String,
            #[serde(default)]
            group: String,
        }
        let a: Association = serde_json::from_slice(&self.open().await?).map_err(bad_body)?;
        let names: Vec<&str> = a.policies.iter().map(String::as_str).collect();
        if names.is_empty() {
            return Err(S3Error::new(S3ErrorCode::InvalidArgument, "name at least one policy"));
        }
        let target = match (a.user.is_empty(), a.group.is_empty()) {
            (false, true) => Target::User(&a.user),
            (true, false) => Target::Group(&a.group),
            _ => return Err(S3Error::new(S3ErrorCode::InvalidArgument, "name one user or one group")),
        };
        if attach {
            change(self.node, |s| s.attach(target, &names)).await?;
        } else {
            change(self.node, |s| s.detach(target, &names)).await?;
        }
        let now = strata_types::time::iso8601(strata_types::time::now_nanos());
        let changed = if attach { "policiesAttached" } else { "policiesDetached" };
        self.sealed(&json!({ changed: a.policies, "updatedAt": now })).await
    }
}

fn empty() -> Reply {
    Reply::empty(StatusCode::OK).header("content-length", "0")
}

/// MinIO's client expects exactly 204 from some operations (a 200 reads as an error there).
fn no_content() -> Reply {
    Reply::empty(StatusCode::NO_CONTENT)
}

/// What MinIO's client reads as "no expiry".
const NO_EXPIRY: &str = "1970-01-01T00:00:00Z";

/// An RFC 3339 time as MinIO's client sends one (`Z` or a `+hh:mm` offset) in Unix seconds;
/// `None` for its "no expiry" (the zero time or 1970).
fn expiry(text: &str) -> Result<Option<u64>, S3Error> {
    let bad = || S3Error::new(S3ErrorCode::InvalidArgument, &format!("{text:?} is not an RFC 3339 time"));
    if text.starts_with("0001-01-01") || text.starts_with("1970-01-01T00:00:00") {
        return Ok(None);
    }
    let (local, offset) = match text.len().checked_sub(6).map(|i| text.split_at(i)) {
        Some((l, o)) if (o.starts_with('+') || o.starts_with('-')) && o.as_bytes().get(3) == Some(&b':') => {
            let sign: i64 = if o.starts_with('-') { -1 } else { 1 };
            let hours: i64 = o[1..3].parse().map_err(|_| bad())?;
            let minutes: i64 = o[4..6].parse().map_err(|_| bad())?;
            (format!("{l}Z"), sign * (hours * 3600 + minutes * 60))
        }
        _ => (text.to_owned(), 0),
    };
    let local = strata_types::time::parse_iso8601(&local).ok_or_else(bad)?;
    let utc = i64::try_from(local).map_err(|_| bad())? - offset;
    u64::try_from(utc).map(Some).map_err(|_| bad())
}

/// A service account as MinIO describes one (without its access key).
fn service_account(s: &ServiceAccount) -> Value {
    let mut v = json!({
        "parentUser": s.parent,
        "accountStatus": if s.status == Status::Enabled { "on" } else { "off" },
        "impliedPolicy": s.policy.is_none(),
        "policy": s.policy.clone().unwrap_or_default(),
        "name": s.name.clone().unwrap_or_default(),
        "description": s.description.clone().unwrap_or_default(),
    });
    if let Some(e) = s.expiry {
        v["expiration"] = json!(strata_types::time::iso8601(e * 1_000_000_000));
    }
    v
}

fn parse_document(document: &str) -> Value {
    serde_json::from_str(document).unwrap_or_else(|_| Value::String(document.to_owned()))
}

/// A user as MinIO describes one: its policies comma-separated, its status and groups.
fn user_info(state: &IamState, key: &str) -> Value {
    let Some(user) = state.users.get(key) else { return Value::Null };
    let groups: Vec<&str> = state.groups_of(key).map(|(n, _)| n).collect();
    json!({
        "policyName": user.policies.iter().map(String::as_str).collect::<Vec<_>>().join(","),
        "status": status_name(user.status),
        "memberOf": groups,
    })
}

/// The configuration keys MinIO's `mc admin config get` can read here, with what they say.
const CONFIG_KEYS: [(&str, &str); 2] = [
    ("region", "the region this deployment reports (STRATA_REGION)"),
    ("storage_class", "the parity of new objects (STRATA_STORAGE_CLASS_STANDARD, STRATA_STORAGE_CLASS_RRS)"),
];

/// The standard storage class's parity: the first set's.
fn standard_parity(node: &Node) -> usize {
    node.layer.sets().first().map_or(0, |v| v.drives.len() - v.read_quorum)
}

/// MinIO's `BgHealState`: every set with its drives and their state, and what the healer did.
async fn background_heal(node: &Node) -> Value {
    let status = node.layer.heal_status().await;
    let states = crate::observe::drive_states(node).await;
    let mut parity = 0;
    let sets: Vec<Value> = states
        .iter()
        .map(|(view, infos)| {
            parity = view.drives.len() - view.read_quorum;
            let disks: Vec<Value> = view
                .drives
                .iter()
                .zip(infos)
                .enumerate()
                .map(|(index, (drive, info))| {
                    let endpoint = drive
                        .as_ref()
                        .map_or_else(|| format!("offline-{index}"), |d| d.endpoint().to_owned());
                    json!({
                        "endpoint": endpoint,
                        "state": if info.is_some() { "ok" } else { "offline" },
                        "pool_index": view.pool,
                        "set_index": view.set,
                        "disk_index": index,
                    })
                })
                .collect();
            json!({
                "id": format!("{}-{}", view.pool, view.set),
                "pool_index": view.pool,
                "set_index": view.set,
                "heal_status": status.state,
                "heal_priority": format!("{:?}", status.priority).to_lowercase(),
                "disks": disks,
            })
        })
        .collect();
    json!({
        "offline_nodes": [],
        "ScannedItemsCount": status.scan.objects_scanned,
        "HealDisks": [],
        "sets": sets,
        "sc_parity": { "STANDARD": parity },
    })
}

/// The `host:port` a drive endpoint names (`http://host:port/path`), or `None` for a local
/// drive (a path).
fn drive_host(endpoint: &str) -> Option<&str> {
    let rest = endpoint.strip_prefix("http://").or_else(|| endpoint.strip_prefix("https://"))?;
    Some(rest.split('/').next().unwrap_or(rest))
}

/// This node as the client named it (its `Host`), as MinIO's answers name servers.
/// A streaming answer of the chunks `rx` gives (trace and log streams), as MinIO sends them.
fn event_stream(rx: tokio::sync::mpsc::Receiver<Result<Bytes, strata_object::ObjectError>>) -> Reply {
    let reply = Reply {
        status: StatusCode::OK,
        headers: http::HeaderMap::new(),
        body: ResponseBody::Stream(None, rx),
    };
    reply
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .header("x-accel-buffering", "no")
}

fn here(parts: &http::request::Parts) -> String {
    parts.headers.get(http::header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost").to_owned()
}

/// MinIO's `InfoMessage`: the servers with their drives, and the erasure layout.
async fn info(admin: &Admin, parts: &http::request::Parts) -> Value {
    let node = admin.node.as_ref();
    let here = here(parts);
    let states = crate::observe::drive_states(node).await;
    let mut servers: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    servers.insert(here.clone(), Vec::new());
    let (mut online, mut offline) = (0u64, 0u64);
    let mut sets_per_pool: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    let mut parity = 0;
    for (view, infos) in &states {
        let entry = sets_per_pool.entry(view.pool).or_insert((0, view.drives.len()));
        entry.0 += 1;
        parity = view.drives.len() - view.read_quorum;
        for (index, (drive, info)) in view.drives.iter().zip(infos).enumerate() {
            let endpoint =
                drive.as_ref().map_or_else(|| format!("offline-{index}"), |d| d.endpoint().to_owned());
            let host = drive_host(&endpoint).map_or_else(|| here.clone(), str::to_owned);
            let path = match drive_host(&endpoint) {
                Some(h) => endpoint.split_once(h).map_or("", |(_, p)| p).to_owned(),
                None => endpoint.clone(),
            };
            let (state, info) = match info {
                Some(i) => {
                    online += 1;
                    ("ok", *i)
                }
                None => {
                    offline += 1;
                    ("offline", Default::default())
                }
            };
            let info: strata_object::DiskInfo = info;
            servers.entry(host).or_default().push(json!({
                "endpoint": endpoint,
                "path": path,
                "state": state,
                "uuid": "",
                "totalspace": info.total_bytes,
                "usedspace": info.total_bytes.saturating_sub(info.free_bytes),
                "availspace": info.free_bytes,
                "pool_index": view.pool,
                "set_index": view.set,
                "disk_index": index,
            }));
        }
    }
    let started = strata_types::process::start_time_unix("self").unwrap_or(0.0);
    let uptime = (strata_types::time::now_nanos() as f64 / 1e9 - started).max(0.0) as u64;
    let network: BTreeMap<&String, &str> = servers.keys().map(|h| (h, "online")).collect();
    let servers: Vec<Value> = servers
        .iter()
        .map(|(host, drives)| {
            let reachable = host == &here || drives.iter().any(|d| d["state"] == "ok");
            json!({
                "state": if reachable { "online" } else { "offline" },
                "endpoint": host,
                "scheme": "http",
                "uptime": uptime,
                "version": concat!("strata-", env!("CARGO_PKG_VERSION")),
                "commitID": "",
                "network": network,
                "drives": drives,
                "poolNumber": drives.first().map_or(0, |d| d["pool_index"].as_u64().unwrap_or(0) + 1),
            })
        })
        .collect();
    let pools = sets_per_pool.len();
    let total_sets: Vec<usize> = (0..pools).map(|p| sets_per_pool.get(&p).map_or(0, |s| s.0)).collect();
    let drives_per_set: Vec<usize> = (0..pools).map(|p| sets_per_pool.get(&p).map_or(0, |s| s.1)).collect();
    json!({
        "mode": "online",
        "deploymentID": node.layer.deployment_id().to_string(),
        "region": node.config.region,
        "servers": servers,
        "backend": {
            "backendType": "Erasure",
            "onlineDisks": online,
            "offlineDisks": offline,
            "standardSCParity": parity,
            "rrSCParity": parity,
            "totalSets": total_sets,
            "totalDrivesPerSet": drives_per_set,
        },
    })
}

/// Runs `f` (a key derivation of 64 MiB) on a blocking thread, one at a time in the process.
pub async fn one_at_a_time<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    static GATE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);
    let _permit = GATE.acquire().await.ok()?;
    tokio::task::spawn_blocking(f).await.ok()
}

/// MinIO's `TraceInfo` of one S3 request (type 4: S3).
fn trace_json(e: &strata_s3::trace::TraceEntry, host: &str) -> serde_json::Value {
    let nanos = u64::try_from(e.duration.as_nanos()).unwrap_or(u64::MAX);
    let headers = |h: &[(String, String)]| {
        let mut map = serde_json::Map::new();
        for (k, v) in h {
            let values = map.entry(k.clone()).or_insert_with(|| json!([]));
            if let Some(list) = values.as_array_mut() {
                list.push(json!(v));
            }
        }
        serde_json::Value::Object(map)
    };
    let iso = strata_types::time::iso8601;
    json!({
        "type": 4,
        "nodename": host,
        "funcname": format!("s3.{}", e.api),
        "time": iso(e.time),
        "path": e.path,
        "dur": nanos,
        "http": {
            "request": {
                "time": iso(e.time),
                "proto": "HTTP/1.1",
                "method": e.method,
                "path": e.path,
                "rawquery": e.query,
                "headers": headers(&e.headers),
                "client": "",
            },
            "response": {
                "time": iso(e.time.saturating_add(nanos)),
                "headers": headers(&e.response_headers),
                "statuscode": e.status,
            },
            "stats": {
                "inputbytes": e.input_bytes,
                "outputbytes": e.output_bytes,
                "latency": nanos,
                "timetofirstbyte": nanos,
            },
        },
    })
}

/// A Go duration (`0s`, `100ms`, `1m30s`, `1.5s`, `250us`); `None` for anything else.
fn go_duration(s: &str) -> Option<std::time::Duration> {
    if s == "0" {
        return Some(std::time::Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * seconds;
        rest = &rest[unit_len..];
    }
    std::time::Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use super::go_duration;

    #[test]
    fn go_durations() {
        use std::time::Duration;
        for (text, want) in [
            ("0s", Duration::ZERO),
            ("0", Duration::ZERO),
            ("100ms", Duration::from_millis(100)),
            ("1m30s", Duration::from_secs(90)),
            ("1.5s", Duration::from_millis(1500)),
            ("250us", Duration::from_micros(250)),
            ("2h", Duration::from_secs(7200)),
        ] {
            assert_eq!(go_duration(text), Some(want), "{text}");
        }
        for bad in ["", "s", "10", "1x", "-1s", "1s2"] {
            assert_eq!(go_duration(bad), None, "{bad}");
        }
    }

    use super::*;

    #[test]
    fn the_signed_region_is_read_from_the_scope() {
        let parts = |auth: &str| {
            let (p, _) = http::Request::builder()
                .header("authorization", auth)
                .body(())
                .expect("request")
                .into_parts();
            p
        };
        let minio =
            "AWS4-HMAC-SHA256 Credential=admin/20261127//s3/aws4_request, SignedHeaders=host, Signature=00";
        assert_eq!(signed_region(&parts(minio)).as_deref(), Some(""));
        let aws = "AWS4-HMAC-SHA256 Credential=admin/20261127/eu-west-1/s3/aws4_request,SignedHeaders=host,Signature=0";
        assert_eq!(signed_region(&parts(aws)).as_deref(), Some("eu-west-1"));
        assert_eq!(signed_region(&parts("Bearer x")), None);
    }

    #[test]
    fn drive_hosts() {
        assert_eq!(drive_host("http://10.0.0.1:9000/mnt/d1"), Some("10.0.0.1:9000"));
        assert_eq!(drive_host("/mnt/d1"), None);
    }
}
