//! Server-side encryption as the S3 API asks for it: the request headers of SSE-S3, SSE-KMS and
//! SSE-C (and the bucket's default encryption) turned into the data key of a new object, the
//! data key of a stored object recovered for a read, and the response headers AWS sends.
//!
//! - A new object gets a random data key and a random object id. SSE-S3 seals the key with the
//!   KMS's default key, SSE-KMS with the key the client names (the encryption context and the
//!   object id bound to it); SSE-C with the client's key, of which only a salted MAC is stored.
//! - Reading an SSE-C object needs the same customer key headers (over TLS unless the operator
//!   allows plain HTTP); they are refused on objects that are not SSE-C, as AWS refuses them.
//!
//! The object layer only sees an `ObjectCipher` (see `strata_object::SsePut`); the key never
//! reaches a drive in clear.

use std::sync::Arc;

use base64::Engine;
use http::HeaderMap;
use md5::{Digest, Md5};
use strata_crypto::package::ObjectCipher;
use strata_crypto::{DataKey, Kms};
use strata_object::{BucketEncryption, SseEnvelope, SseKind, SsePut};
use uuid::Uuid;

use crate::context::{Reply, Request};
use crate::error::{S3Error, S3ErrorCode};

/// The SSE-C request headers, and the copy source's.
pub const CUSTOMER: &str = "x-amz-server-side-encryption-customer-";
pub const COPY_SOURCE_CUSTOMER: &str = "x-amz-copy-source-server-side-encryption-customer-";
const SSE_C_AAD: &[u8] = b"strata sse-c v1\0";
/// Additional data of an encryption context sealed under its object's data key (with the
/// object id after it).
const CONTEXT_AAD: &[u8] = b"strata sse-kms context v1\0";
/// ARN prefix a client may put before a KMS key id (`arn:aws:kms:region:account:key/ID`).
const KMS_ARN_KEY: &str = ":key/";

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

fn bad(code: S3ErrorCode, message: &str) -> S3Error {
    S3Error::new(code, message)
}

/// What a request asks for a new object.
#[derive(Debug)]
pub enum SseRequest {
    S3,
    /// `aws:kms`, or with `dual` `aws:kms:dsse` (two layers).
    Kms {
        key_id: Option<String>,
        context: Option<String>,
        dual: bool,
    },
    C(CustomerKey),
}

/// A client's SSE-C key, checked against its MD5.
#[derive(Debug, Clone)]
pub struct CustomerKey {
    key: DataKey,
    /// Base64 MD5 of the key, as the client sent it (echoed back).
    md5: String,
}

/// The SSE-C headers under `prefix` ([`CUSTOMER`] or [`COPY_SOURCE_CUSTOMER`]), if any, checked
/// as AWS checks them; refused over plain HTTP unless the operator allows it.
pub fn customer_key(req: &Request<'_>, prefix: &str) -> Result<Option<CustomerKey>, S3Error> {
    let h = |suffix: &str| header(req.headers, &format!("{prefix}{suffix}"));
    let (algorithm, key, md5) = (h("algorithm"), h("key"), h("key-md5"));
    if algorithm.is_none() && key.is_none() && md5.is_none() {
        return Ok(None);
    }
    if !req.tls && !req.node.config.sse_c_allow_http {
        return Err(bad(
            S3ErrorCode::InvalidRequest,
            "Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection.",
        ));
    }
    match algorithm {
        Some("AES256") => {}
        Some(_) => {
            return Err(bad(
                S3ErrorCode::InvalidEncryptionAlgorithmError,
                "The encryption request you specified is not valid. The valid value is AES256.",
            ))
        }
        None => {
            return Err(bad(
                S3ErrorCode::InvalidArgument,
                "Requests specifying Server Side Encryption with Customer provided keys must provide a valid encryption algorithm.",
            ))
        }
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let key =
        key.and_then(|k| b64.decode(k).ok()).and_then(|k| DataKey::from_slice(&k).ok()).ok_or_else(|| {
            bad(S3ErrorCode::InvalidArgument, "The secret key was invalid for the specified algorithm.")
        })?;
    let md5 = md5.ok_or_else(|| {
        bad(
            S3ErrorCode::InvalidArgument,
            "Requests specifying Server Side Encryption with Customer provided keys must provide the client calculated MD5 of the secret key.",
        )
    })?;
    let want: [u8; 16] = Md5::digest(key.as_bytes()).into();
    if b64.decode(md5).ok().as_deref() != Some(&want[..]) {
        return Err(bad(
            S3ErrorCode::InvalidArgument,
            "The calculated MD5 hash of the key did not match the hash that was provided.",
        ));
    }
    Ok(Some(CustomerKey { key, md5: md5.to_owned() }))
}

/// A KMS key id as a client may write it: the id, or an ARN ending in `:key/ID`.
fn kms_key_id(value: &str) -> String {
    value.rsplit_once(KMS_ARN_KEY).map_or(value, |(_, id)| id).to_owned()
}

/// What a request creating an object (PutObject, CreateMultipartUpload, CopyObject's
/// destination) asks for; the bucket's default applies when it asks for nothing.
pub fn requested(
    req: &Request<'_>,
    default: Option<&BucketEncryption>,
) -> Result<Option<SseRequest>, S3Error> {
    let customer = customer_key(req, CUSTOMER)?;
    let algorithm = header(req.headers, "x-amz-server-side-encryption");
    let key_id = header(req.headers, "x-amz-server-side-encryption-aws-kms-key-id");
    let context = header(req.headers, "x-amz-server-side-encryption-context");
    if key_id.is_some() && !matches!(algorithm, Some("aws:kms" | "aws:kms:dsse")) {
        return Err(bad(
            S3ErrorCode::InvalidArgument,
            "Server Side Encryption with AWS KMS managed key requires HTTP header x-amz-server-side-encryption : aws:kms or aws:kms:dsse",
        ));
    }
    let context = context.map(parse_context).transpose()?;
    let asked = match (algorithm, customer) {
        (Some(_), Some(_)) => {
            return Err(bad(
                S3ErrorCode::InvalidArgument,
                "Server Side Encryption with Customer provided key is incompatible with the encryption method specified",
            ))
        }
        (None, Some(c)) => Some(SseRequest::C(c)),
        (Some("AES256"), None) => Some(SseRequest::S3),
        (Some(a @ ("aws:kms" | "aws:kms:dsse")), None) => {
            Some(SseRequest::Kms { key_id: key_id.map(kms_key_id), context, dual: a == "aws:kms:dsse" })
        }
        (Some(_), None) => {
            return Err(bad(S3ErrorCode::InvalidArgument, "The encryption method specified is not supported"))
        }
        (None, None) => None,
    };
    Ok(asked.or_else(|| {
        default.map(|d| match d.algorithm.as_str() {
            a @ ("aws:kms" | "aws:kms:dsse") => SseRequest::Kms {
                key_id: d.kms_key_id.as_deref().map(kms_key_id),
                context: None,
                dual: a == "aws:kms:dsse",
            },
            _ => SseRequest::S3,
        })
    }))
}

/// `x-amz-server-side-encryption-context`: base64 of a JSON object of strings.
fn parse_context(value: &str) -> Result<String, S3Error> {
    let invalid = || {
        bad(S3ErrorCode::InvalidArgument, "The encryption context is not base64 of a JSON object of strings.")
    };
    let json = base64::engine::general_purpose::STANDARD.decode(value).map_err(|_| invalid())?;
    let map: std::collections::BTreeMap<String, String> =
        serde_json::from_slice(&json).map_err(|_| invalid())?;
    // Canonical form (sorted keys): the same context in another order decrypts too.
    serde_json::to_string(&map).map_err(|_| invalid())
}

/// The KMS context bytes a data key is bound to: the object id, then (in records written before
/// contexts were sealed) the client's context.
fn kms_context(object_id: Uuid, context: Option<&str>) -> Vec<u8> {
    let mut c = object_id.as_bytes().to_vec();
    c.extend_from_slice(context.unwrap_or("").as_bytes());
    c
}

/// The KMS context of a dual-layer object's second data key.
fn outer_context(object_id: Uuid) -> Vec<u8> {
    [object_id.as_bytes().as_slice(), b"outer"].concat()
}

fn context_aad(object_id: Uuid) -> Vec<u8> {
    [CONTEXT_AAD, object_id.as_bytes()].concat()
}

fn no_kms() -> S3Error {
    bad(
        S3ErrorCode::NotImplemented,
        "Server-side encryption with a KMS needs a KMS: set STRATA_KMS_SECRET_KEY (or STRATA_KMS_VAULT_ENDPOINT).",
    )
}

/// A fresh data key for a new object as `asked`, and what to store and return about it.
pub async fn seal_new(
    req: &Request<'_>,
    asked: SseRequest,
) -> Result<(SsePut, Option<CustomerKey>), S3Error> {
    // A Content-MD5 is checked against the plaintext, so it needs the plaintext's MD5 too.
    seal_new_with(req.node.kms.as_ref(), asked, req.headers.contains_key("content-md5")).await
}

/// [`seal_new`] for a caller without a request (the speedtest), with the node's KMS: `plain_md5` asks for the
/// plaintext's MD5 whatever the kind (SSE-S3 objects always have it: it is their ETag).
pub async fn seal_new_with(
    kms: Option<&Arc<dyn Kms>>,
    asked: SseRequest,
    plain_md5: bool,
) -> Result<(SsePut, Option<CustomerKey>), S3Error> {
    let object_id = Uuid::new_v4();
    let (envelope, key, outer_key, customer) = match asked {
        SseRequest::C(customer) => {
            let key = DataKey::generate().map_err(internal)?;
            let sealed_key =
                customer.key.seal_key(&key, &[SSE_C_AAD, object_id.as_bytes()].concat()).map_err(internal)?;
            let key_mac = Some(customer.key.key_mac().map_err(internal)?);
            let envelope = SseEnvelope {
                kind: SseKind::C,
                object_id,
                sealed_key,
                kms_key_id: None,
                context: None,
                sealed_context: None,
                sealed_outer_key: None,
                key_mac,
                sealed_checksums: None,
            };
            (envelope, key, None, Some(customer))
        }
        SseRequest::S3 | SseRequest::Kms { .. } => {
            let kms = kms.ok_or_else(no_kms)?;
            let (kind, key_id, context) = match asked {
                SseRequest::Kms { key_id, context, dual } => {
                    let kind = if dual { SseKind::Dsse } else { SseKind::Kms };
                    (kind, key_id.unwrap_or_else(|| kms.default_key_id().to_owned()), context)
                }
                _ => (SseKind::S3, kms.default_key_id().to_owned(), None),
            };
            // The data key is bound to the object; the context is sealed under the data key, so
            // the record holds nothing of it in clear.
            let generated = kms.generate_key(&key_id, &kms_context(object_id, None)).await?;
            let sealed_context = context
                .map(|c| generated.key.seal(c.as_bytes(), &context_aad(object_id)))
                .transpose()
                .map_err(internal)?;
            // DSSE's second layer: a second data key of the same KMS key, bound apart.
            let outer = match kind {
                SseKind::Dsse => Some(kms.generate_key(&key_id, &outer_context(object_id)).await?),
                _ => None,
            };
            let envelope = SseEnvelope {
                kind,
                object_id,
                sealed_key: generated.ciphertext,
                kms_key_id: Some(key_id),
                context: None,
                sealed_context,
                sealed_outer_key: outer.as_ref().map(|o| o.ciphertext.clone()),
                key_mac: None,
                sealed_checksums: None,
            };
            (envelope, generated.key, outer.map(|o| o.key), None)
        }
    };
    let mut cipher = ObjectCipher::new(&key, *object_id.as_bytes());
    if let Some(outer) = &outer_key {
        cipher = cipher.with_second_layer(outer);
    }
    // The plaintext MD5 is the ETag of SSE-S3 objects.
    let plain_md5 = envelope.kind == SseKind::S3 || plain_md5;
    Ok((SsePut { envelope, cipher, plain_md5 }, customer))
}

/// The encryption of a new object in `bucket`: what the request asks, or the bucket's default.
pub async fn for_new_object(
    req: &Request<'_>,
    bucket: &str,
) -> Result<(Option<SsePut>, Option<CustomerKey>), S3Error> {
    let default = req.node.layer.with_bucket_record(bucket, |r| r.encryption.clone())?;
    match requested(req, default.as_ref())? {
        Some(asked) => {
            let (put, customer) = seal_new(req, asked).await?;
            Ok((Some(put), customer))
        }
        None => Ok((None, None)),
    }
}

fn internal(e: strata_crypto::CryptoError) -> S3Error {
    tracing::error!(error = %e, "encryption");
    bad(S3ErrorCode::InternalError, "We encountered an internal error. Please try again.")
}

/// The cipher of a stored object's data, from the KMS or from the request's SSE-C key
/// (`prefix`: [`CUSTOMER`], or [`COPY_SOURCE_CUSTOMER`] for a copy's source). Also the key's MD5
/// to echo. Customer key headers on an object that is not SSE-C are refused, as AWS does.
pub async fn open_stored(
    req: &Request<'_>,
    envelope: Option<&SseEnvelope>,
    prefix: &str,
) -> Result<(Option<ObjectCipher>, Option<String>), S3Error> {
    let customer = customer_key(req, prefix)?;
    let Some(envelope) = envelope else {
        return match customer {
            Some(_) => Err(not_applicable()),
            None => Ok((None, None)),
        };
    };
    let customer_md5 = customer.as_ref().map(|c| c.md5.clone());
    let cipher = open_envelope(req.node.kms.as_ref(), envelope, customer.as_ref()).await?;
    Ok((Some(cipher), customer_md5))
}

/// The cipher of a stored object's data: its data key opened by the KMS (SSE-S3, SSE-KMS) or
/// by `customer`'s key (SSE-C, which must be given and be the object's key).
pub async fn open_envelope(
    kms: Option<&Arc<dyn Kms>>,
    envelope: &SseEnvelope,
    customer: Option<&CustomerKey>,
) -> Result<ObjectCipher, S3Error> {
    let object_id = envelope.object_id;
    let key = match envelope.kind {
        SseKind::C => {
            let customer = customer.ok_or_else(|| {
                bad(
                    S3ErrorCode::InvalidRequest,
                    "The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object.",
                )
            })?;
            let mac = envelope.key_mac.as_deref().unwrap_or_default();
            if !customer.key.matches_mac(mac) {
                return Err(bad(S3ErrorCode::AccessDenied, "Access Denied"));
            }
            customer
                .key
                .open_key(&envelope.sealed_key, &[SSE_C_AAD, object_id.as_bytes()].concat())
                .map_err(|_| bad(S3ErrorCode::AccessDenied, "Access Denied"))?
        }
        SseKind::S3 | SseKind::Kms | SseKind::Dsse => {
            if customer.is_some() {
                return Err(not_applicable());
            }
            let kms = kms.ok_or_else(no_kms)?;
            let key_id = envelope.kms_key_id.as_deref().unwrap_or(kms.default_key_id());
            let context = kms_context(object_id, envelope.context.as_deref());
            let key = kms.decrypt_key(key_id, &envelope.sealed_key, &context).await?;
            if envelope.kind == SseKind::Dsse {
                let Some(sealed) = envelope.sealed_outer_key.as_deref() else {
                    tracing::error!(%object_id, "a dual-layer object without its second key");
                    return Err(bad(
                        S3ErrorCode::InternalError,
                        "We encountered an internal error. Please try again.",
                    ));
                };
                let outer = kms.decrypt_key(key_id, sealed, &outer_context(object_id)).await?;
                return Ok(ObjectCipher::new(&key, *object_id.as_bytes()).with_second_layer(&outer));
            }
            key
        }
    };
    Ok(ObjectCipher::new(&key, *object_id.as_bytes()))
}

/// SSE-C: the cipher of the request's customer key for `envelope` (checked as on a read: the
/// wrong key is `AccessDenied`) and the key's MD5 to echo, when the request carries a key and
/// the envelope is SSE-C; `None` otherwise. It opens sealed checksums.
pub async fn customer_cipher(
    req: &Request<'_>,
    envelope: Option<&SseEnvelope>,
) -> Result<Option<(ObjectCipher, String)>, S3Error> {
    let Some(envelope) = envelope.filter(|e| e.kind == SseKind::C) else { return Ok(None) };
    let Some(customer) = customer_key(req, CUSTOMER)? else { return Ok(None) };
    let cipher = open_envelope(req.node.kms.as_ref(), envelope, Some(&customer)).await?;
    Ok(Some((cipher, customer.md5)))
}

/// How a part of an upload is sealed: the upload's envelope with its data key (from the KMS, or
/// from the part request's SSE-C key, which must be the upload's). Also the key MD5 to echo.
pub async fn for_part(
    req: &Request<'_>,
    envelope: Option<&SseEnvelope>,
    prefix: &str,
) -> Result<(Option<SsePut>, Option<String>), S3Error> {
    let (cipher, customer_md5) = open_stored(req, envelope, prefix).await?;
    let put = match (envelope, cipher) {
        (Some(envelope), Some(cipher)) => {
            let plain_md5 = envelope.kind == SseKind::S3 || req.headers.contains_key("content-md5");
            Some(SsePut { envelope: envelope.clone(), cipher, plain_md5 })
        }
        _ => None,
    };
    Ok((put, customer_md5))
}

fn not_applicable() -> S3Error {
    bad(S3ErrorCode::InvalidRequest, "The encryption parameters are not applicable to this object.")
}

/// On the response to a write that created an SSE-KMS or DSSE-KMS object or upload (PutObject,
/// CopyObject, CreateMultipartUpload): the encryption context the request gave, echoed as AWS
/// does. Reads never show it (it is kept sealed).
pub fn with_written_context(reply: Reply, req: &Request<'_>, envelope: Option<&SseEnvelope>) -> Reply {
    let kms = envelope.is_some_and(|e| matches!(e.kind, SseKind::Kms | SseKind::Dsse));
    match header(req.headers, "x-amz-server-side-encryption-context") {
        Some(context) if kms => reply.header("x-amz-server-side-encryption-context", context),
        _ => reply,
    }
}

/// The encryption response headers AWS sends with an object (PUT, GET, HEAD, copies, parts).
pub fn with_headers(mut reply: Reply, envelope: Option<&SseEnvelope>, customer_md5: Option<&str>) -> Reply {
    let Some(e) = envelope else { return reply };
    match e.kind {
        SseKind::S3 => reply = reply.header("x-amz-server-side-encryption", "AES256"),
        SseKind::Kms | SseKind::Dsse => {
            let algorithm = if e.kind == SseKind::Dsse { "aws:kms:dsse" } else { "aws:kms" };
            reply = reply.header("x-amz-server-side-encryption", algorithm);
            if let Some(id) = &e.kms_key_id {
                reply = reply.header("x-amz-server-side-encryption-aws-kms-key-id", id);
            }
        }
        SseKind::C => {
            reply = reply.header("x-amz-server-side-encryption-customer-algorithm", "AES256");
            if let Some(md5) = customer_md5 {
                reply = reply.header("x-amz-server-side-encryption-customer-key-md5", md5);
            }
        }
    }
    reply
}

impl CustomerKey {
    /// The key's MD5 as the client sent it.
    pub fn md5(&self) -> &str {
        &self.md5
    }

    /// A random customer key, as a client would make one (the speedtest's).
    pub fn generate() -> Result<Self, S3Error> {
        let key = DataKey::generate().map_err(internal)?;
        let md5: [u8; 16] = Md5::digest(key.as_bytes()).into();
        Ok(Self { key, md5: base64::engine::general_purpose::STANDARD.encode(md5) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_crypto::kms::{GeneratedKey, KeyInfo, KmsError, KmsStatus};

    #[test]
    fn kms_key_ids_and_contexts() {
        assert_eq!(kms_key_id("my-key"), "my-key");
        assert_eq!(kms_key_id("arn:aws:kms:us-east-1:123456789012:key/my-key"), "my-key");
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        assert_eq!(parse_context(&b64(r#"{"b":"2","a":"1"}"#)).expect("ok"), r#"{"a":"1","b":"2"}"#);
        for bad in [b64("[1]"), b64(r#"{"a":1}"#), "not base64!".to_owned(), b64("{")] {
            assert_eq!(parse_context(&bad).map_err(|e| e.code), Err(S3ErrorCode::InvalidArgument), "{bad}");
        }
    }

    /// A KMS over a real key ring, in memory.
    #[derive(Debug)]
    struct RingKms(std::sync::Mutex<strata_crypto::keyring::Keyring>);

    #[async_trait::async_trait]
    impl Kms for RingKms {
        fn default_key_id(&self) -> &str {
            "k"
        }
        async fn generate_key(&self, id: &str, context: &[u8]) -> Result<GeneratedKey, KmsError> {
            self.0.lock().expect("ring").generate(id, context)
        }
        async fn decrypt_key(&self, id: &str, sealed: &[u8], context: &[u8]) -> Result<DataKey, KmsError> {
            self.0.lock().expect("ring").decrypt(id, sealed, context)
        }
        async fn create_key(&self, id: &str) -> Result<(), KmsError> {
            self.0.lock().expect("ring").create(id, 0)
        }
        async fn list_keys(&self) -> Result<Vec<KeyInfo>, KmsError> {
            Ok(self.0.lock().expect("ring").list())
        }
        async fn rotate_key(&self, id: &str) -> Result<KeyInfo, KmsError> {
            self.0.lock().expect("ring").rotate(id, 0)
        }
        async fn set_key_enabled(&self, id: &str, enabled: bool) -> Result<KeyInfo, KmsError> {
            self.0.lock().expect("ring").set_enabled(id, enabled)
        }
        async fn status(&self) -> KmsStatus {
            KmsStatus { kind: "test", endpoint: String::new(), default_key: "k".into(), online: true }
        }
    }

    fn ring_kms() -> Arc<dyn Kms> {
        let mut ring = strata_crypto::keyring::Keyring::default();
        ring.create("k", 0).expect("key");
        Arc::new(RingKms(std::sync::Mutex::new(ring)))
    }

    /// Seals and opens one package with `cipher`, sealed by `by`.
    fn same_cipher(by: &ObjectCipher, cipher: &ObjectCipher) -> bool {
        let mut sealed = Vec::new();
        by.seal_package(0, 0, true, b"data", &mut sealed);
        cipher.open_package(0, 0, true, &mut sealed).is_ok_and(|p| p == b"data")
    }

    #[tokio::test]
    async fn an_encryption_context_is_stored_sealed_and_older_clear_ones_still_open() {
        let kms = ring_kms();
        let context = r#"{"project":"unicorn-7731"}"#.to_owned();
        let asked = SseRequest::Kms { key_id: None, context: Some(context.clone()), dual: false };
        let (put, _) = seal_new_with(Some(&kms), asked, false).await.expect("sealed");
        let e = &put.envelope;
        assert_eq!(e.context, None, "never in clear");
        let stored = serde_json::to_vec(e).expect("encodes");
        assert!(!stored.windows(12).any(|w| w == b"unicorn-7731"), "nothing of it in the record");
        // The data key opens it; the object's cipher comes from the KMS without it.
        let key =
            kms.decrypt_key("k", &e.sealed_key, e.object_id.as_bytes()).await.expect("bound to the object");
        let sealed = e.sealed_context.as_deref().expect("kept sealed");
        assert_eq!(key.open(sealed, &context_aad(e.object_id)).expect("opens"), context.as_bytes());
        assert!(key.open(sealed, &context_aad(Uuid::new_v4())).is_err(), "bound to its object");
        let opened = open_envelope(Some(&kms), e, None).await.expect("opens");
        assert!(same_cipher(&put.cipher, &opened));

        // A record written before: the context in clear and bound into the data key.
        let object_id = Uuid::new_v4();
        let generated = kms.generate_key("k", &kms_context(object_id, Some(&context))).await.expect("key");
        let old = SseEnvelope {
            kind: SseKind::Kms,
            object_id,
            sealed_key: generated.ciphertext,
            kms_key_id: Some("k".into()),
            context: Some(context),
            sealed_context: None,
            sealed_outer_key: None,
            key_mac: None,
            sealed_checksums: None,
        };
        let opened = open_envelope(Some(&kms), &old, None).await.expect("opens");
        assert!(same_cipher(&ObjectCipher::new(&generated.key, *object_id.as_bytes()), &opened));
    }

    #[tokio::test]
    async fn dsse_objects_have_two_layers_under_two_data_keys() {
        let kms = ring_kms();
        let asked = SseRequest::Kms { key_id: None, context: None, dual: true };
        let (put, _) = seal_new_with(Some(&kms), asked, false).await.expect("sealed");
        let e = &put.envelope;
        assert_eq!(e.kind, SseKind::Dsse);
        assert!(put.cipher.is_dual_layer(), "written in two layers");
        let inner = kms.decrypt_key("k", &e.sealed_key, e.object_id.as_bytes()).await.expect("first key");
        let sealed_outer = e.sealed_outer_key.as_deref().expect("a second key");
        let outer =
            kms.decrypt_key("k", sealed_outer, &outer_context(e.object_id)).await.expect("second key");
        assert_ne!(inner.as_bytes(), outer.as_bytes(), "two independent data keys");
        let both = ObjectCipher::new(&inner, *e.object_id.as_bytes()).with_second_layer(&outer);
        assert!(same_cipher(&put.cipher, &both));
        assert!(!same_cipher(&put.cipher, &ObjectCipher::new(&inner, *e.object_id.as_bytes())));
        let opened = open_envelope(Some(&kms), e, None).await.expect("opens");
        assert!(opened.is_dual_layer() && same_cipher(&put.cipher, &opened));
        // A record that lost its second key is an error, never a read in one layer.
        let broken = SseEnvelope { sealed_outer_key: None, ..e.clone() };
        let err = open_envelope(Some(&kms), &broken, None).await.map(drop);
        assert_eq!(err.map_err(|e| e.code), Err(S3ErrorCode::InternalError));
    }
}
