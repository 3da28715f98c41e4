//! Every operation against AWS's reference ("Actions, resources, and condition keys for Amazon
//! S3", API operations table, and each operation's Permissions section).

use super::*;
use crate::router::route_with_headers;
use http::Method;
use strata_iam::{evaluate, Policy, PolicyKind, Principal, Request};

const FACTS: Facts = Facts {
    source_ip: None,
    secure_transport: false,
    now_unix_secs: 1_700_000_000,
    auth: AuthType::Header { v4: true },
};

fn authorize(
    method: Method,
    path: &str,
    query: &str,
    headers: &[(&str, &str)],
) -> (Operation, Authorization) {
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        map.append(http::HeaderName::from_bytes(k.as_bytes()).expect("name"), v.parse().expect("value"));
    }
    let route = route_with_headers(&method, path, query, &map, None).expect("route");
    let auth = authorization(&route, &map, &FACTS).expect("authorization");
    (route.operation, auth)
}

const OBJ: Option<&str> = Some("arn:aws:s3:::b/k");
const BKT: Option<&str> = Some("arn:aws:s3:::b");
const SRC: Option<&str> = Some("arn:aws:s3:::src/a b");

type Case = (
    Operation,
    Method,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static [(&'static str, Option<&'static str>)],
);

fn cases() -> Vec<Case> {
    use Operation as O;
    vec![
        (O::ListBuckets, Method::GET, "/", "", &[], &[("s3:ListAllMyBuckets", None)]),
        (O::CreateBucket, Method::PUT, "/b", "", &[], &[("s3:CreateBucket", BKT)]),
        (O::DeleteBucket, Method::DELETE, "/b", "", &[], &[("s3:DeleteBucket", BKT)]),
        (O::HeadBucket, Method::HEAD, "/b", "", &[], &[("s3:ListBucket", BKT)]),
        (O::GetBucketLocation, Method::GET, "/b", "location", &[], &[("s3:GetBucketLocation", BKT)]),
        (O::GetBucketVersioning, Method::GET, "/b", "versioning", &[], &[("s3:GetBucketVersioning", BKT)]),
        (O::PutBucketVersioning, Method::PUT, "/b", "versioning", &[], &[("s3:PutBucketVersioning", BKT)]),
        (
            O::GetObjectLockConfiguration,
            Method::GET,
            "/b",
            "object-lock",
            &[],
            &[("s3:GetBucketObjectLockConfiguration", BKT)],
        ),
        (
            O::PutObjectLockConfiguration,
            Method::PUT,
            "/b",
            "object-lock",
            &[],
            &[("s3:PutBucketObjectLockConfiguration", BKT)],
        ),
        (O::GetObjectRetention, Method::GET, "/b/k", "retention", &[], &[("s3:GetObjectRetention", OBJ)]),
        (O::PutObjectRetention, Method::PUT, "/b/k", "retention", &[], &[("s3:PutObjectRetention", OBJ)]),
        (O::GetObjectLegalHold, Method::GET, "/b/k", "legal-hold", &[], &[("s3:GetObjectLegalHold", OBJ)]),
        (O::PutObjectLegalHold, Method::PUT, "/b/k", "legal-hold", &[], &[("s3:PutObjectLegalHold", OBJ)]),
        (O::ListObjects, Method::GET, "/b", "prefix=a", &[], &[("s3:ListBucket", BKT)]),
        (O::ListObjectsV2, Method::GET, "/b", "list-type=2", &[], &[("s3:ListBucket", BKT)]),
        (O::PutObject, Method::PUT, "/b/k", "", &[], &[("s3:PutObject", OBJ)]),
        (O::GetObject, Method::GET, "/b/k", "", &[], &[("s3:GetObject", OBJ)]),
        (O::HeadObject, Method::HEAD, "/b/k", "", &[], &[("s3:GetObject", OBJ)]),
        (O::DeleteObject, Method::DELETE, "/b/k", "", &[], &[("s3:DeleteObject", OBJ)]),
        (O::CreateMultipartUpload, Method::POST, "/b/k", "uploads", &[], &[("s3:PutObject", OBJ)]),
        (O::UploadPart, Method::PUT, "/b/k", "partNumber=1&uploadId=u", &[], &[("s3:PutObject", OBJ)]),
        (O::CompleteMultipartUpload, Method::POST, "/b/k", "uploadId=u", &[], &[("s3:PutObject", OBJ)]),
        (
            O::AbortMultipartUpload,
            Method::DELETE,
            "/b/k",
            "uploadId=u",
            &[],
            &[("s3:AbortMultipartUpload", OBJ)],
        ),
        (O::ListParts, Method::GET, "/b/k", "uploadId=u", &[], &[("s3:ListMultipartUploadParts", OBJ)]),
        (
            O::ListMultipartUploads,
            Method::GET,
            "/b",
            "uploads",
            &[],
            &[("s3:ListBucketMultipartUploads", BKT)],
        ),
        (O::DeleteObjects, Method::POST, "/b", "delete", &[], &[]),
        (
            O::CopyObject,
            Method::PUT,
            "/b/k",
            "",
            &[("x-amz-copy-source", "/src/a%20b")],
            &[("s3:PutObject", OBJ), ("s3:GetObject", SRC)],
        ),
        (O::ListObjectVersions, Method::GET, "/b", "versions", &[], &[("s3:ListBucketVersions", BKT)]),
        (O::GetBucketAcl, Method::GET, "/b", "acl", &[], &[("s3:GetBucketAcl", BKT)]),
        (O::PutBucketAcl, Method::PUT, "/b", "acl", &[], &[("s3:PutBucketAcl", BKT)]),
        (O::GetObjectAcl, Method::GET, "/b/k", "acl", &[], &[("s3:GetObjectAcl", OBJ)]),
        (O::PutObjectAcl, Method::PUT, "/b/k", "acl", &[], &[("s3:PutObjectAcl", OBJ)]),
        (
            O::GetBucketOwnershipControls,
            Method::GET,
            "/b",
            "ownershipControls",
            &[],
            &[("s3:GetBucketOwnershipControls", BKT)],
        ),
        (
            O::PutBucketOwnershipControls,
            Method::PUT,
            "/b",
            "ownershipControls",
            &[],
            &[("s3:PutBucketOwnershipControls", BKT)],
        ),
        (
            O::DeleteBucketOwnershipControls,
            Method::DELETE,
            "/b",
            "ownershipControls",
            &[],
            &[("s3:PutBucketOwnershipControls", BKT)],
        ),
        (O::GetBucketPolicy, Method::GET, "/b", "policy", &[], &[("s3:GetBucketPolicy", BKT)]),
        (O::PutBucketPolicy, Method::PUT, "/b", "policy", &[], &[("s3:PutBucketPolicy", BKT)]),
        (O::DeleteBucketPolicy, Method::DELETE, "/b", "policy", &[], &[("s3:DeleteBucketPolicy", BKT)]),
        (
            O::GetBucketPolicyStatus,
            Method::GET,
            "/b",
            "policyStatus",
            &[],
            &[("s3:GetBucketPolicyStatus", BKT)],
        ),
        (
            O::GetBucketNotificationConfiguration,
            Method::GET,
            "/b",
            "notification",
            &[],
            &[("s3:GetBucketNotification", BKT)],
        ),
        (
            O::PutBucketNotificationConfiguration,
            Method::PUT,
            "/b",
            "notification",
            &[],
            &[("s3:PutBucketNotification", BKT)],
        ),
        (
            O::GetBucketLifecycleConfiguration,
            Method::GET,
            "/b",
            "lifecycle",
            &[],
            &[("s3:GetLifecycleConfiguration", BKT)],
        ),
        (
            O::PutBucketLifecycleConfiguration,
            Method::PUT,
            "/b",
            "lifecycle",
            &[],
            &[("s3:PutLifecycleConfiguration", BKT)],
        ),
        (
            O::DeleteBucketLifecycle,
            Method::DELETE,
            "/b",
            "lifecycle",
            &[],
            &[("s3:PutLifecycleConfiguration", BKT)],
        ),
        (
            O::GetBucketReplication,
            Method::GET,
            "/b",
            "replication",
            &[],
            &[("s3:GetReplicationConfiguration", BKT)],
        ),
        (
            O::PutBucketReplication,
            Method::PUT,
            "/b",
            "replication",
            &[],
            &[("s3:PutReplicationConfiguration", BKT)],
        ),
        (
            O::DeleteBucketReplication,
            Method::DELETE,
            "/b",
            "replication",
            &[],
            &[("s3:PutReplicationConfiguration", BKT)],
        ),
        (
            O::GetPublicAccessBlock,
            Method::GET,
            "/b",
            "publicAccessBlock",
            &[],
            &[("s3:GetBucketPublicAccessBlock", BKT)],
        ),
        (
            O::PutPublicAccessBlock,
            Method::PUT,
            "/b",
            "publicAccessBlock",
            &[],
            &[("s3:PutBucketPublicAccessBlock", BKT)],
        ),
        (
            O::DeletePublicAccessBlock,
            Method::DELETE,
            "/b",
            "publicAccessBlock",
            &[],
            &[("s3:PutBucketPublicAccessBlock", BKT)],
        ),
        (O::GetObjectTagging, Method::GET, "/b/k", "tagging", &[], &[("s3:GetObjectTagging", OBJ)]),
        (O::PutObjectTagging, Method::PUT, "/b/k", "tagging", &[], &[("s3:PutObjectTagging", OBJ)]),
        (O::DeleteObjectTagging, Method::DELETE, "/b/k", "tagging", &[], &[("s3:DeleteObjectTagging", OBJ)]),
        (
            O::GetObjectAttributes,
            Method::GET,
            "/b/k",
            "attributes",
            &[],
            &[("s3:GetObject", OBJ), ("s3:GetObjectAttributes", OBJ)],
        ),
        (O::GetObjectTorrent, Method::GET, "/b/k", "torrent", &[], &[("s3:GetObjectTorrent", OBJ)]),
        (O::GetBucketTagging, Method::GET, "/b", "tagging", &[], &[("s3:GetBucketTagging", BKT)]),
        (O::PutBucketTagging, Method::PUT, "/b", "tagging", &[], &[("s3:PutBucketTagging", BKT)]),
        (O::DeleteBucketTagging, Method::DELETE, "/b", "tagging", &[], &[("s3:PutBucketTagging", BKT)]),
        (
            O::GetBucketEncryption,
            Method::GET,
            "/b",
            "encryption",
            &[],
            &[("s3:GetEncryptionConfiguration", BKT)],
        ),
        (
            O::PutBucketEncryption,
            Method::PUT,
            "/b",
            "encryption",
            &[],
            &[("s3:PutEncryptionConfiguration", BKT)],
        ),
        (
            O::DeleteBucketEncryption,
            Method::DELETE,
            "/b",
            "encryption",
            &[],
            &[("s3:PutEncryptionConfiguration", BKT)],
        ),
        (O::GetBucketCors, Method::GET, "/b", "cors", &[], &[("s3:GetBucketCORS", BKT)]),
        (O::PutBucketCors, Method::PUT, "/b", "cors", &[], &[("s3:PutBucketCORS", BKT)]),
        (O::DeleteBucketCors, Method::DELETE, "/b", "cors", &[], &[("s3:PutBucketCORS", BKT)]),
        (
            O::UploadPartCopy,
            Method::PUT,
            "/b/k",
            "partNumber=2&uploadId=u",
            &[("x-amz-copy-source", "src/a%20b?versionId=v1")],
            &[("s3:PutObject", OBJ), ("s3:GetObjectVersion", SRC)],
        ),
        (O::PostObject, Method::POST, "/b", "", &[], &[]),
        (
            O::ListenBucketNotification,
            Method::GET,
            "/b",
            "events=s3:ObjectCreated:*&ping=10",
            &[],
            &[("s3:ListenBucketNotification", BKT)],
        ),
        (
            O::ListenNotification,
            Method::GET,
            "/",
            "events=s3:ObjectCreated:*",
            &[],
            &[("s3:ListenNotification", None)],
        ),
    ]
}

fn pairs(auth: &Authorization) -> Vec<(&'static str, Option<&str>)> {
    auth.checks.iter().map(|c| (c.action, c.resource.as_deref())).collect()
}

#[test]
fn every_operation_has_its_documented_actions() {
    let cases = cases();
    for op in Operation::ALL {
        assert!(cases.iter().any(|c| c.0 == *op), "{} has no case", op.name());
    }
    for (op, method, path, query, headers, want) in cases {
        let (routed, auth) = authorize(method, path, query, headers);
        assert_eq!(routed, op, "{path}?{query} routes to {}", op.name());
        assert_eq!(pairs(&auth), want.to_vec(), "{}", op.name());
        for check in &auth.checks {
            assert_eq!(strata_iam::action::check(check.action), Ok(()), "a known action");
        }
    }
}

#[test]
fn version_ids_call_for_the_version_actions() {
    let cases = [
        (Method::GET, "", "s3:GetObjectVersion"),
        (Method::HEAD, "", "s3:GetObjectVersion"),
        (Method::DELETE, "", "s3:DeleteObjectVersion"),
        (Method::GET, "tagging&", "s3:GetObjectVersionTagging"),
        (Method::PUT, "tagging&", "s3:PutObjectVersionTagging"),
        (Method::DELETE, "tagging&", "s3:DeleteObjectVersionTagging"),
        (Method::GET, "acl&", "s3:GetObjectVersionAcl"),
        (Method::PUT, "acl&", "s3:PutObjectVersionAcl"),
    ];
    for (method, sub, action) in cases {
        let (_, auth) = authorize(method.clone(), "/b/k", &format!("{sub}versionId=null"), &[]);
        assert_eq!(pairs(&auth), vec![(action, OBJ)], "{method} {sub}");
        assert_eq!(auth.values.get("s3:versionid"), ["null"]);
    }
    let (_, auth) = authorize(Method::GET, "/b/k", "attributes&versionId=null", &[]);
    assert_eq!(pairs(&auth), vec![("s3:GetObjectVersion", OBJ), ("s3:GetObjectVersionAttributes", OBJ)]);
}

#[test]
fn headers_that_call_for_more_actions() {
    let (_, auth) = authorize(
        Method::PUT,
        "/b/k",
        "",
        &[
            ("x-amz-tagging", "project=blue&cost%20center=7"),
            ("x-amz-acl", "public-read"),
            ("x-amz-object-lock-legal-hold", "ON"),
        ],
    );
    assert_eq!(
        pairs(&auth),
        vec![
            ("s3:PutObject", OBJ),
            ("s3:PutObjectAcl", OBJ),
            ("s3:PutObjectTagging", OBJ),
            ("s3:PutObjectLegalHold", OBJ)
        ]
    );
    assert_eq!(auth.values.get("s3:requestobjecttag/project"), ["blue"]);
    assert_eq!(auth.values.get("s3:requestobjecttag/cost center"), ["7"]);
    assert_eq!(auth.values.get("s3:requestobjecttagkeys"), ["project", "cost center"]);
    assert_eq!(auth.values.get("s3:x-amz-acl"), ["public-read"]);
    let (_, auth) = authorize(Method::POST, "/b/k", "uploads", &[("x-amz-object-lock-mode", "GOVERNANCE")]);
    assert_eq!(pairs(&auth), vec![("s3:PutObject", OBJ), ("s3:PutObjectRetention", OBJ)]);
    // A copy needs tagging rights only when it replaces the tags.
    let copy = |directive: &str| {
        let headers = [
            ("x-amz-copy-source", "src/k"),
            ("x-amz-tagging", "a=1"),
            ("x-amz-tagging-directive", directive),
        ];
        authorize(Method::PUT, "/b/k", "", &headers).1.checks.iter().map(|c| c.action).collect::<Vec<_>>()
    };
    assert_eq!(copy("COPY"), vec!["s3:PutObject", "s3:GetObject"]);
    assert_eq!(copy("REPLACE"), vec!["s3:PutObject", "s3:GetObject", "s3:PutObjectTagging"]);
    let (_, auth) = authorize(
        Method::PUT,
        "/b",
        "",
        &[("x-amz-grant-read", "uri=x"), ("x-amz-object-ownership", "ObjectWriter")],
    );
    let actions: Vec<_> = auth.checks.iter().map(|c| c.action).collect();
    assert_eq!(actions, vec!["s3:CreateBucket", "s3:PutBucketAcl", "s3:PutBucketOwnershipControls"]);
    assert_eq!(auth.values.get("s3:x-amz-object-ownership"), ["ObjectWriter"]);
    assert_eq!(auth.values.get("s3:x-amz-grant-read"), ["uri=x"]);
}

#[test]
fn condition_keys_of_the_request() {
    let (_, auth) =
        authorize(Method::GET, "/b", "list-type=2&prefix=home%2Falice%2F&delimiter=%2F&max-keys=50", &[]);
    assert_eq!(auth.values.get("s3:prefix"), ["home/alice/"]);
    assert_eq!(auth.values.get("s3:delimiter"), ["/"]);
    assert_eq!(auth.values.get("s3:max-keys"), ["50"]);
    let (_, auth) = authorize(Method::GET, "/b", "", &[]);
    assert!(auth.values.get("s3:prefix").is_empty(), "no prefix, no key");
    let headers = [
        ("x-amz-server-side-encryption", "AES256"),
        ("x-amz-storage-class", "STANDARD"),
        ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
        ("user-agent", "boto3"),
    ];
    let (_, auth) = authorize(Method::PUT, "/b/k", "", &headers);
    assert_eq!(auth.values.get("s3:x-amz-server-side-encryption"), ["AES256"]);
    assert_eq!(auth.values.get("s3:x-amz-storage-class"), ["STANDARD"]);
    assert_eq!(auth.values.get("s3:x-amz-content-sha256"), ["UNSIGNED-PAYLOAD"]);
    assert_eq!(auth.values.get("aws:useragent"), ["boto3"]);
    assert_eq!(auth.values.get("aws:securetransport"), ["false"]);
    assert_eq!(auth.values.get("aws:currenttime"), ["2023-11-14T22:13:20.000Z"]);
    assert_eq!(auth.values.get("aws:epochtime"), ["1700000000"]);
    assert_eq!(auth.values.get("s3:authtype"), ["REST-HEADER"]);
    assert_eq!(auth.values.get("s3:signatureversion"), ["AWS4-HMAC-SHA256"]);
    let (_, copy) = authorize(
        Method::PUT,
        "/b/k",
        "",
        &[("x-amz-copy-source", "/src/k"), ("x-amz-metadata-directive", "REPLACE")],
    );
    assert_eq!(copy.values.get("s3:x-amz-copy-source"), ["src/k"]);
    assert_eq!(copy.values.get("s3:x-amz-metadata-directive"), ["REPLACE"]);
    // Every spelling of one source is one value: a policy's pattern cannot be passed by
    // writing the same object another way.
    for spelling in ["src/other/k", "/src/other/k", "src/%6Fther/k", "/src%2Fother%2Fk"] {
        let (_, copy) = authorize(Method::PUT, "/b/k", "", &[("x-amz-copy-source", spelling)]);
        assert_eq!(copy.values.get("s3:x-amz-copy-source"), ["src/other/k"], "{spelling}");
    }
    let (_, copy) = authorize(Method::PUT, "/b/k", "", &[("x-amz-copy-source", "/src/k%20x?versionId=v1")]);
    assert_eq!(copy.values.get("s3:x-amz-copy-source"), ["src/k x?versionId=v1"]);
}

#[test]
fn global_keys_follow_the_connection() {
    let route = crate::router::route(&Method::GET, "/b/k", "", None, None).expect("route");
    let facts = Facts {
        source_ip: Some("2001:db8::7".parse().expect("ip")),
        secure_transport: true,
        now_unix_secs: 0,
        auth: AuthType::Query { v4: false },
    };
    let auth = authorization(&route, &HeaderMap::new(), &facts).expect("authorization");
    assert_eq!(auth.values.get("aws:sourceip"), ["2001:db8::7"]);
    assert_eq!(auth.values.get("aws:securetransport"), ["true"]);
    assert_eq!(auth.values.get("s3:authtype"), ["REST-QUERY-STRING"]);
    assert_eq!(auth.values.get("s3:signatureversion"), ["AWS"]);
    let anonymous = Facts { auth: AuthType::Anonymous, ..facts };
    let auth = authorization(&route, &HeaderMap::new(), &anonymous).expect("authorization");
    assert!(auth.values.get("s3:authtype").is_empty() && auth.values.get("s3:signatureversion").is_empty());
}

#[test]
fn body_named_objects_are_deferred() {
    let (_, auth) = authorize(Method::POST, "/b", "delete", &[]);
    assert_eq!(auth.deferred, Deferred::EachDeletedKey);
    assert_eq!(
        delete_objects_entry("b", "k", None),
        Check { action: "s3:DeleteObject", resource: OBJ.map(str::to_owned) }
    );
    assert_eq!(delete_objects_entry("b", "k", Some("v")).action, "s3:DeleteObjectVersion");
    let (_, auth) = authorize(Method::POST, "/b", "", &[]);
    assert_eq!(auth.deferred, Deferred::PostForm);
    let mut values = ConditionValues::new();
    let fields =
        [("acl".to_owned(), "public-read".to_owned()), ("tagging".to_owned(), "<Tagging/>".to_owned())];
    let checks = post_object("b", "k", &fields, &mut values);
    let actions: Vec<_> = checks.iter().map(|c| c.action).collect();
    assert_eq!(actions, vec!["s3:PutObject", "s3:PutObjectAcl", "s3:PutObjectTagging"]);
    assert_eq!(values.get("s3:x-amz-acl"), ["public-read"]);
}

#[test]
fn a_bad_copy_source_is_refused_not_guessed() {
    let mut map = HeaderMap::new();
    map.insert("x-amz-copy-source", "nokey".parse().expect("value"));
    let route = route_with_headers(&Method::PUT, "/b/k", "", &map, None).expect("route");
    assert_eq!(
        authorization(&route, &map, &FACTS).map_err(|e| e.code),
        Err(crate::error::S3ErrorCode::InvalidArgument)
    );
}

/// The table and the evaluator together: a user who may upload but not tag cannot upload with
/// tags; one limited to a prefix lists only under it.
#[test]
fn table_and_policies_together() {
    let policy = Policy::parse(
        br#"{"Version":"2012-10-17","Statement":[
          {"Effect":"Allow","Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*"},
          {"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b","Condition":{"StringLike":{"s3:prefix":"${aws:username}/*"}}}]}"#,
        PolicyKind::Identity,
    )
    .expect("policy");
    let alice = Principal::user("alice", "AKIAALICE");
    let allowed = |auth: &Authorization| {
        auth.checks.iter().all(|c| {
            let request = Request {
                action: c.action,
                resource: c.resource.as_deref(),
                principal: &alice,
                values: &auth.values,
            };
            evaluate(&request, [&policy], None).is_allowed()
        })
    };
    assert!(allowed(&authorize(Method::PUT, "/b/k", "", &[]).1));
    assert!(!allowed(&authorize(Method::PUT, "/b/k", "", &[("x-amz-tagging", "a=1")]).1));
    assert!(allowed(&authorize(Method::GET, "/b", "prefix=alice/x", &[]).1));
    assert!(!allowed(&authorize(Method::GET, "/b", "prefix=bob/", &[]).1));
    assert!(!allowed(&authorize(Method::GET, "/b/k", "", &[]).1));
}

#[test]
fn a_malformed_policy_is_a_malformed_policy_error() {
    let e: S3Error = Policy::parse(br#"{"Statement":[{"Effect":"Permit"}]}"#, PolicyKind::Bucket("b"))
        .expect_err("bad")
        .into();
    assert_eq!(
        (e.code, e.code.status()),
        (crate::error::S3ErrorCode::MalformedPolicy, http::StatusCode::BAD_REQUEST)
    );
    assert_eq!(e.message, "Statement[0].Effect: must be \"Allow\" or \"Deny\"");
}
