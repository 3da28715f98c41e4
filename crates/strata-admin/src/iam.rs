//! The IAM part of the admin API, under `/_strata/admin/v1/iam/`: users, groups, named policies
//! and service accounts. Answers are JSON; secrets travel only in request bodies (never in a
//! query, which logs keep) and are shown once, when a service account is made. Every change is
//! stored through [`strata_system::iam::Iam::change`] and told to the other nodes before the answer.
//!
//! | method and path | does | admin action |
//! |---|---|---|
//! | `GET iam/users` | lists users | `admin:ListUsers` |
//! | `GET iam/user?accessKey=` | one user | `admin:GetUser` |
//! | `PUT iam/user?accessKey=` `{"secretKey":..}` | adds a user | `admin:CreateUser` |
//! | `DELETE iam/user?accessKey=` | removes a user, its keys and memberships | `admin:DeleteUser` |
//! | `POST iam/user/status?accessKey=&status=enabled\|disabled` | | `admin:EnableUser`/`DisableUser` |
//! | `GET iam/groups`, `GET iam/group?group=` | | `admin:ListGroups`, `admin:GetGroup` |
//! | `POST iam/group/members?group=` `{"members":[..]}` | adds members (makes the group) | `admin:AddUserToGroup` |
//! | `DELETE iam/group/members?group=` `{"members":[..]}` | removes members; none named: the (empty) group | `admin:RemoveUserFromGroup` |
//! | `POST iam/group/status?group=&status=` | | `admin:EnableGroup`/`DisableGroup` |
//! | `GET iam/policies`, `GET iam/policy?name=` | built-in ones included | `admin:ListPolicies`, `admin:GetPolicy` |
//! | `PUT iam/policy?name=` (the document) | creates or replaces | `admin:CreatePolicy` |
//! | `DELETE iam/policy?name=` | removes an unattached policy | `admin:DeletePolicy` |
//! | `POST iam/policy/attach?name=&user=\|group=` (and `detach`) | names may be comma-separated | `admin:AttachPolicy`/`DetachPolicy` |
//! | `PUT iam/svcacct?parent=` `{"accessKey"?, "secretKey"?, "policy"?, "expiry"?}` | adds a service account; answers its secret | `admin:CreateServiceAccount` |
//! | `GET iam/svcaccts?parent=`, `GET iam/svcacct?accessKey=` | | `admin:ListServiceAccounts` |
//! | `DELETE iam/svcacct?accessKey=` | | `admin:RemoveServiceAccount` |
//! | `POST iam/svcacct/status?accessKey=&status=enabled\|disabled` | | `admin:UpdateServiceAccount` |
//! | `GET iam/simulate?accessKey=&action=&resource=` | whether the identity may do the action (its policies and the bucket's) | `admin:GetPolicy` |

use bytes::Bytes;
use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};
use strata_iam::state::{IamState, Status};
use strata_iam::{builtin, IamError, Target};
use strata_system::credentials::{random_string, ACCESS_KEY_ALPHABET, SECRET_ALPHABET};
use strata_types::limits::SERVICE_ACCOUNT_EXPIRY_MAX_SECS;

use crate::json_reply;
use strata_s3::error::{S3Error, S3ErrorCode};
use strata_s3::{Node, Reply};

type Query = [(String, String)];

pub(crate) fn param<'q>(query: &'q Query, name: &str) -> Option<&'q str> {
    query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

pub(crate) fn required<'q>(query: &'q Query, name: &str) -> Result<&'q str, S3Error> {
    param(query, name)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| S3Error::new(S3ErrorCode::InvalidArgument, &format!("the query needs {name}")))
}

fn invalid(message: &str) -> S3Error {
    S3Error::new(S3ErrorCode::InvalidArgument, message)
}

fn body_json<T: for<'d> Deserialize<'d>>(body: &[u8]) -> Result<T, S3Error> {
    serde_json::from_slice(body).map_err(|e| invalid(&format!("the body is not the JSON expected: {e}")))
}

/// The admin action an IAM operation needs (`None`: not an IAM operation).
pub fn action(method: &Method, op: &str, query: &Query) -> Option<&'static str> {
    let enable = param(query, "status").is_some_and(|s| s.eq_ignore_ascii_case("enabled"));
    Some(match (method, op) {
        (&Method::GET, "iam/users") => "admin:ListUsers",
        (&Method::GET, "iam/user") => "admin:GetUser",
        (&Method::PUT, "iam/user") => "admin:CreateUser",
        (&Method::DELETE, "iam/user") => "admin:DeleteUser",
        (&Method::POST, "iam/user/status") if enable => "admin:EnableUser",
        (&Method::POST, "iam/user/status") => "admin:DisableUser",
        (&Method::GET, "iam/groups") => "admin:ListGroups",
        (&Method::GET, "iam/group") => "admin:GetGroup",
        (&Method::POST, "iam/group/members") => "admin:AddUserToGroup",
        (&Method::DELETE, "iam/group/members") => "admin:RemoveUserFromGroup",
        (&Method::POST, "iam/group/status") if enable => "admin:EnableGroup",
        (&Method::POST, "iam/group/status") => "admin:DisableGroup",
        (&Method::GET, "iam/policies") => "admin:ListPolicies",
        (&Method::GET, "iam/policy") => "admin:GetPolicy",
        (&Method::PUT, "iam/policy") => "admin:CreatePolicy",
        (&Method::DELETE, "iam/policy") => "admin:DeletePolicy",
        (&Method::POST, "iam/policy/attach") => "admin:AttachPolicy",
        (&Method::POST, "iam/policy/detach") => "admin:DetachPolicy",
        (&Method::PUT, "iam/svcacct") => "admin:CreateServiceAccount",
        (&Method::GET, "iam/svcaccts" | "iam/svcacct") => "admin:ListServiceAccounts",
        (&Method::DELETE, "iam/svcacct") => "admin:RemoveServiceAccount",
        (&Method::POST, "iam/svcacct/status") => "admin:UpdateServiceAccount",
        (&Method::GET, "iam/simulate") => "admin:GetPolicy",
        _ => return None,
    })
}

/// Serves one IAM admin operation (the caller checked [`action`] and the caller's right to it).
pub async fn serve(
    node: &Node,
    method: &Method,
    op: &str,
    query: &Query,
    body: &Bytes,
) -> Result<Reply, S3Error> {
    let ok = || Ok(json_reply(StatusCode::OK, &json!({ "generation": node.iam.generation() })));
    match (method, op) {
        (&Method::GET, "iam/users") => {
            Ok(json_reply(StatusCode::OK, &list_users(node.iam.directory().state())))
        }
        (&Method::GET, "iam/user") => user_info(node.iam.directory().state(), required(query, "accessKey")?),
        (&Method::PUT, "iam/user") => {
            #[derive(Deserialize)]
            #[serde(rename_all = "camelCase")]
            struct NewUser {
                secret_key: String,
            }
            let key = required(query, "accessKey")?;
            let new: NewUser = body_json(body)?;
            if key == node.config.root_user {
                return Err(IamError::AccessKeyInUse(key.to_owned()).into());
            }
            change(node, |s| s.add_user(key, &new.secret_key)).await?;
            ok()
        }
        (&Method::DELETE, "iam/user") => {
            let key = required(query, "accessKey")?;
            change(node, |s| s.remove_user(key)).await?;
            ok()
        }
        (&Method::POST, "iam/user/status") => {
            let (key, status) = (required(query, "accessKey")?, status(query)?);
            change(node, |s| s.set_user_status(key, status)).await?;
            ok()
        }
        (&Method::GET, "iam/groups") => {
            Ok(json_reply(StatusCode::OK, &list_groups(node.iam.directory().state())))
        }
        (&Method::GET, "iam/group") => group_info(node.iam.directory().state(), required(query, "group")?),
        (&Method::POST | &Method::DELETE, "iam/group/members") => {
            group_members(node, method, query, body).await
        }
        (&Method::POST, "iam/group/status") => {
            let (group, status) = (required(query, "group")?, status(query)?);
            change(node, |s| s.set_group_status(group, status)).await?;
            ok()
        }
        (&Method::GET, "iam/policies") => {
            Ok(json_reply(StatusCode::OK, &list_policies(node.iam.directory().state())))
        }
        (&Method::GET, "iam/policy") => policy_info(node.iam.directory().state(), required(query, "name")?),
        (&Method::PUT, "iam/policy") => {
            let name = required(query, "name")?;
            let document = std::str::from_utf8(body).map_err(|_| invalid("the policy is not UTF-8"))?;
            change(node, |s| s.set_policy(name, document)).await?;
            ok()
        }
        (&Method::DELETE, "iam/policy") => {
            let name = required(query, "name")?;
            change(node, |s| s.remove_policy(name)).await?;
            ok()
        }
        (&Method::POST, "iam/policy/attach" | "iam/policy/detach") => attach(node, op, query).await,
        (&Method::PUT, "iam/svcacct") => add_service_account(node, query, body).await,
        (&Method::GET, "iam/svcaccts") => Ok(json_reply(
            StatusCode::OK,
            &list_service_accounts(node.iam.directory().state(), param(query, "parent")),
        )),
        (&Method::GET, "iam/svcacct") => {
            let key = required(query, "accessKey")?;
            let dir = node.iam.directory();
            let svc = dir
                .state()
                .service_accounts
                .get(key)
                .ok_or_else(|| S3Error::from(IamError::NoSuchServiceAccount(key.to_owned())))?;
            Ok(json_reply(StatusCode::OK, &service_account_json(key, svc)))
        }
        (&Method::DELETE, "iam/svcacct") => {
            let key = required(query, "accessKey")?;
            change(node, |s| s.remove_service_account(key)).await?;
            ok()
        }
        (&Method::POST, "iam/svcacct/status") => {
            let (key, status) = (required(query, "accessKey")?, status(query)?);
            change(node, |s| s.set_service_account_status(key, status)).await?;
            ok()
        }
        (&Method::GET, "iam/simulate") => simulate(node, query),
        _ => Err(S3Error::new(S3ErrorCode::InvalidRequest, &format!("unknown admin operation {op:?}"))),
    }
}

/// Applies a change, stores it, and tells the other nodes.
pub(crate) async fn change<R>(
    node: &Node,
    f: impl Fn(&mut IamState) -> Result<R, IamError>,
) -> Result<R, S3Error> {
    let answer = node.iam.change(&node.layer, f).await?;
    node.layer.tell_peers(strata_object::SharedState::Iam).await;
    Ok(answer)
}

pub(crate) fn status(query: &Query) -> Result<Status, S3Error> {
    match param(query, "status") {
        Some(s) if s.eq_ignore_ascii_case("enabled") => Ok(Status::Enabled),
        Some(s) if s.eq_ignore_ascii_case("disabled") => Ok(Status::Disabled),
        _ => Err(invalid("status must be enabled or disabled")),
    }
}

pub(crate) fn status_name(s: Status) -> &'static str {
    match s {
        Status::Enabled => "enabled",
        Status::Disabled => "disabled",
    }
}

fn list_users(state: &IamState) -> Value {
    let users: Vec<Value> = state.users.keys().map(|k| user_json(state, k)).collect();
    json!({ "users": users })
}

fn user_json(state: &IamState, key: &str) -> Value {
    let Some(user) = state.users.get(key) else { return Value::Null };
    let groups: Vec<&str> = state.groups_of(key).map(|(n, _)| n).collect();
    json!({
        "accessKey": key,
        "status": status_name(user.status),
        "policies": user.policies,
        "groups": groups,
    })
}

fn user_info(state: &IamState, key: &str) -> Result<Reply, S3Error> {
    if !state.users.contains_key(key) {
        return Err(IamError::NoSuchUser(key.to_owned()).into());
    }
    let mut info = user_json(state, key);
    let keys: Vec<&String> =
        state.service_accounts.iter().filter(|(_, s)| s.parent == key).map(|(k, _)| k).collect();
    info["serviceAccounts"] = json!(keys);
    Ok(json_reply(StatusCode::OK, &info))
}

fn group_json(state: &IamState, name: &str) -> Value {
    let Some(g) = state.groups.get(name) else { return Value::Null };
    json!({ "group": name, "status": status_name(g.status), "members": g.members, "policies": g.policies })
}

fn list_groups(state: &IamState) -> Value {
    let groups: Vec<Value> = state.groups.keys().map(|g| group_json(state, g)).collect();
    json!({ "groups": groups })
}

fn group_info(state: &IamState, group: &str) -> Result<Reply, S3Error> {
    if !state.groups.contains_key(group) {
        return Err(IamError::NoSuchGroup(group.to_owned()).into());
    }
    Ok(json_reply(StatusCode::OK, &group_json(state, group)))
}

async fn group_members(node: &Node, method: &Method, query: &Query, body: &Bytes) -> Result<Reply, S3Error> {
    #[derive(Deserialize)]
    struct Members {
        #[serde(default)]
        members: Vec<String>,
    }
    let group = required(query, "group")?;
    let members: Members = if body.is_empty() { Members { members: Vec::new() } } else { body_json(body)? };
    let names: Vec<&str> = members.members.iter().map(String::as_str).collect();
    if *method == Method::POST {
        change(node, |s| s.add_group_members(group, &names)).await?;
    } else if names.is_empty() {
        change(node, |s| s.remove_group(group)).await?;
    } else {
        change(node, |s| s.remove_group_members(group, &names)).await?;
    }
    Ok(json_reply(StatusCode::OK, &json!({ "generation": node.iam.generation() })))
}

fn list_policies(state: &IamState) -> Value {
    let builtins = builtin::BUILTIN.iter().map(|(n, _)| json!({ "name": n, "builtin": true }));
    let named = state.policies.keys().map(|n| json!({ "name": n, "builtin": false }));
    json!({ "policies": builtins.chain(named).collect::<Vec<_>>() })
}

fn policy_info(state: &IamState, name: &str) -> Result<Reply, S3Error> {
    let (document, is_builtin) = match (state.policies.get(name), builtin::document(name)) {
        (Some(d), _) => (d.as_str(), false),
        (None, Some(d)) => (d, true),
        (None, None) => return Err(IamError::NoSuchPolicy(name.to_owned()).into()),
    };
    let users: Vec<&String> =
        state.users.iter().filter(|(_, u)| u.policies.contains(name)).map(|(k, _)| k).collect();
    let groups: Vec<&String> =
        state.groups.iter().filter(|(_, g)| g.policies.contains(name)).map(|(k, _)| k).collect();
    let parsed: Value = serde_json::from_str(document).unwrap_or(Value::String(document.to_owned()));
    Ok(json_reply(
        StatusCode::OK,
        &json!({ "name": name, "builtin": is_builtin, "document": parsed, "users": users, "groups": groups }),
    ))
}

async fn attach(node: &Node, op: &str, query: &Query) -> Result<Reply, S3Error> {
    let names: Vec<&str> = required(query, "name")?.split(',').filter(|n| !n.is_empty()).collect();
    let target = match (param(query, "user"), param(query, "group")) {
        (Some(u), None) => Target::User(u),
        (None, Some(g)) => Target::Group(g),
        _ => return Err(invalid("name one user or one group")),
    };
    if op.ends_with("attach") && !op.ends_with("detach") {
        change(node, |s| s.attach(target, &names)).await?;
    } else {
        change(node, |s| s.detach(target, &names)).await?;
    }
    Ok(json_reply(StatusCode::OK, &json!({ "generation": node.iam.generation() })))
}

/// What an identity may do: `action` on `resource` (`arn:aws:s3:::bucket[/key]`, or none for
/// an action on no resource) for `accessKey` (a user, a service account or the root user),
/// decided by the same policy engine as its requests, with the bucket's policy. Request
/// conditions (address, time, tags) are taken as absent.
fn simulate(node: &Node, query: &Query) -> Result<Reply, S3Error> {
    let key = required(query, "accessKey")?;
    let action = required(query, "action")?;
    let resource = param(query, "resource").filter(|r| !r.is_empty());
    if let Some(r) = resource.filter(|r| !r.starts_with("arn:aws:s3:::")) {
        return Err(invalid(&format!("the resource {r:?} is not an S3 ARN (arn:aws:s3:::bucket/key)")));
    }
    let answer = |decision: &str, why: &str| {
        Ok(json_reply(
            StatusCode::OK,
            &json!({ "accessKey": key, "action": action, "resource": resource, "decision": decision, "why": why }),
        ))
    };
    if key == node.config.root_user {
        return answer("allow", "the root user may do everything");
    }
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let directory = node.iam.directory();
    let caller = directory
        .caller(key, None, now)
        .map_err(|e| invalid(&format!("{key} is not a user or service account that can act now ({e:?})")))?;
    let bucket = resource
        .and_then(|r| r.strip_prefix("arn:aws:s3:::"))
        .and_then(|r| r.split('/').next())
        .filter(|b| !b.is_empty());
    let bucket_policy = bucket.and_then(|b| node.bucket_policy_for(b, false));
    let values = strata_iam::ConditionValues::new();
    match caller.authorize(action, resource, &values, bucket_policy.as_deref()) {
        strata_iam::Decision::Allow => {
            answer("allow", "a statement of its policies or the bucket's allows it")
        }
        strata_iam::Decision::ExplicitDeny => answer("deny", "a Deny statement applies"),
        strata_iam::Decision::ImplicitDeny => answer("deny", "no statement allows it"),
    }
}

fn service_account_json(key: &str, svc: &strata_iam::state::ServiceAccount) -> Value {
    let policy = svc.policy.as_deref().map(|d| serde_json::from_str::<Value>(d).unwrap_or(Value::Null));
    json!({
        "accessKey": key,
        "parent": svc.parent,
        "status": status_name(svc.status),
        "policy": policy,
        "expiry": svc.expiry,
    })
}

fn list_service_accounts(state: &IamState, parent: Option<&str>) -> Value {
    let accounts: Vec<Value> = state
        .service_accounts
        .iter()
        .filter(|(_, s)| parent.is_none_or(|p| s.parent == p))
        .map(|(k, s)| service_account_json(k, s))
        .collect();
    json!({ "serviceAccounts": accounts })
}

async fn add_service_account(node: &Node, query: &Query, body: &Bytes) -> Result<Reply, S3Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct NewAccount {
        access_key: Option<String>,
        secret_key: Option<String>,
        /// A policy document, as a JSON object or as a string.
        policy: Option<Value>,
        /// Unix seconds.
        expiry: Option<u64>,
    }
    let parent = required(query, "parent")?;
    let new: NewAccount = if body.is_empty() { body_json(b"{}")? } else { body_json(body)? };
    let access_key = match new.access_key {
        Some(k) => k,
        None => random_string(ACCESS_KEY_ALPHABET, 20)?,
    };
    let secret_key = match new.secret_key {
        Some(s) => s,
        None => random_string(SECRET_ALPHABET, 40)?,
    };
    let policy = match new.policy {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(v) => Some(v.to_string()),
    };
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    if new.expiry.is_some_and(|e| e > now + SERVICE_ACCOUNT_EXPIRY_MAX_SECS) {
        return Err(invalid("the expiry is more than a year away"));
    }
    if access_key == node.config.root_user {
        return Err(IamError::AccessKeyInUse(access_key).into());
    }
    change(node, |s| {
        s.add_service_account(&access_key, &secret_key, parent, policy.as_deref(), new.expiry, now)
    })
    .await?;
    Ok(json_reply(
        StatusCode::OK,
        &json!({ "accessKey": access_key, "secretKey": secret_key, "parent": parent, "expiry": new.expiry }),
    ))
}
