//! Never-panic fuzzing of every S3 parser fed by the network (see `strata_types::fuzz`): each
//! target starts from valid inputs and feeds thousands of mutations; a panic fails the test with
//! a replayable report. What the parsers answer is checked by their own unit tests.

use bytes::Bytes;
use http::{Method, Request};
use strata_types::fuzz;

use crate::sigv4::SecretLookup;

struct Secrets;

impl SecretLookup for Secrets {
    fn secret(&self, access_key: &str) -> Option<String> {
        (access_key == "AKIDEXAMPLE").then(|| "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".to_owned())
    }
}

fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

#[test]
fn fuzz_ranges_and_dates() {
    fuzz::run("range", &[b"bytes=0-99", b"bytes=-500", b"bytes=9500-", b"bytes=0-0,-1"], |b| {
        for size in [0, 1, 10_000, u64::MAX] {
            let _ = crate::object::parse_range(&text(b), size);
        }
    });
    fuzz::run("http date", &[b"Sun, 06 Nov 1994 08:49:37 GMT", b"Wed, 21 Oct 2015 07:28:00 GMT"], |b| {
        let _ = crate::object::parse_http_date(&text(b));
    });
}

#[test]
fn fuzz_xml_bodies() {
    let complete = b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"a54357aff0632cce46d942af68356b38\"</ETag><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part><Part><PartNumber>2</PartNumber><ETag>0c78aef83f66abc1fa1e8477f296d394</ETag></Part></CompleteMultipartUpload>";
    fuzz::run("CompleteMultipartUpload", &[complete], |b| {
        let _ = crate::multipart::parse_complete(b);
    });
    let delete = b"<?xml version=\"1.0\"?><Delete><Quiet>true</Quiet><Object><Key>a/b.txt</Key></Object><Object><Key>c&amp;d</Key><VersionId>null</VersionId></Object></Delete>";
    fuzz::run("DeleteObjects", &[delete], |b| {
        let _ = crate::delete::parse_delete(b);
    });
    let tagging = b"<Tagging><TagSet><Tag><Key>project</Key><Value>strata</Value></Tag><Tag><Key>k2</Key><Value></Value></Tag></TagSet></Tagging>";
    fuzz::run("Tagging", &[tagging], |b| {
        let _ = crate::tagging::parse_tagging(b);
        let _ = crate::tagging::from_header(&text(b));
    });
    let cors = b"<CORSConfiguration><CORSRule><AllowedOrigin>http://*.example.com</AllowedOrigin><AllowedMethod>PUT</AllowedMethod><AllowedHeader>*</AllowedHeader><ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>3000</MaxAgeSeconds></CORSRule></CORSConfiguration>";
    fuzz::run("CORSConfiguration", &[cors], |b| {
        let _ = crate::cors::parse_cors(b);
    });
    let lifecycle = b"<LifecycleConfiguration><Rule><ID>a</ID><Filter><And><Prefix>logs/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag><ObjectSizeGreaterThan>1</ObjectSizeGreaterThan></And></Filter><Status>Enabled</Status><Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration><NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays><NewerNoncurrentVersions>3</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule><Rule><Prefix>x</Prefix><Status>Disabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule></LifecycleConfiguration>";
    fuzz::run("LifecycleConfiguration", &[lifecycle], |b| {
        if let Ok(config) = crate::lifecycle::parse(b) {
            let again = crate::lifecycle::parse(crate::lifecycle::write(&config).as_bytes());
            assert_eq!(again.ok(), Some(config), "what GET prints parses back the same");
        }
    });
    let replication = b"<ReplicationConfiguration><Role>r</Role><Rule><ID>a</ID><Priority>1</Priority><Status>Enabled</Status><Filter><And><Prefix>logs/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></And></Filter><ExistingObjectReplication><Status>Enabled</Status></ExistingObjectReplication><Destination><Bucket>arn:aws:s3:::copy</Bucket><StorageClass>STANDARD</StorageClass></Destination><DeleteMarkerReplication><Status>Disabled</Status></DeleteMarkerReplication></Rule><Rule><ID>b</ID><Priority>2</Priority><Status>Disabled</Status><Filter><Prefix>x</Prefix></Filter><Destination><Bucket>arn:aws:s3:::other</Bucket></Destination><DeleteMarkerReplication><Status>Enabled</Status></DeleteMarkerReplication></Rule></ReplicationConfiguration>";
    fuzz::run("ReplicationConfiguration", &[replication], |b| {
        if let Ok(config) = crate::replication::parse(b) {
            let again = crate::replication::parse(crate::replication::write(&config).as_bytes());
            assert_eq!(again.ok(), Some(config), "what GET prints parses back the same");
        }
    });
    let pab = b"<PublicAccessBlockConfiguration><BlockPublicAcls>true</BlockPublicAcls><IgnorePublicAcls>false</IgnorePublicAcls><BlockPublicPolicy>true</BlockPublicPolicy><RestrictPublicBuckets>true</RestrictPublicBuckets></PublicAccessBlockConfiguration>";
    fuzz::run("PublicAccessBlock", &[pab], |b| {
        let _ = crate::acl::parse_public_access_block(b);
        let _ = crate::xml::first_text(b, "BlockPublicAcls");
    });
    let acl = b"<AccessControlPolicy><Owner><ID>abc</ID></Owner><AccessControlList><Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"Group\"><URI>http://acs.amazonaws.com/groups/global/AllUsers</URI></Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>";
    fuzz::run("AccessControlPolicy", &[acl], |b| {
        let _ = crate::acl::parse_policy_document(b);
        let _ = crate::grants::parse_grant_header(&text(b));
    });
}

#[test]
fn fuzz_post_policies_copy_sources_and_credentials() {
    use base64::Engine;
    let policy = br#"{"expiration": "2030-01-01T00:00:00.000Z", "conditions": [{"bucket": "b"}, ["starts-with", "$key", "user/"], ["content-length-range", 1, 10485760], {"x-amz-credential": "AKIDEXAMPLE/20300101/us-east-1/s3/aws4_request"}]}"#;
    fuzz::run("POST policy", &[policy], |b| {
        let _ = crate::post::parse_policy(&base64::engine::general_purpose::STANDARD.encode(b));
        let _ = crate::post::parse_policy(&text(b));
    });
    fuzz::run("copy source", &[b"/bucket/key%20with%20space", b"bucket/a/b?versionId=null"], |b| {
        let _ = crate::router::parse_source(&text(b));
    });
    fuzz::run("credential", &[b"AKIDEXAMPLE/20150830/us-east-1/s3/aws4_request"], |b| {
        let _ = crate::sigv4::parse_credential(&text(b));
    });
}

/// Requests with fuzzed Authorization headers and query strings through SigV4 and SigV2.
#[test]
fn fuzz_signatures_and_routing() {
    let header = b"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31";
    let v2 = b"AWS AKIDEXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=";
    let presigned = b"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
    let v2q = b"AWSAccessKeyId=AKIDEXAMPLE&Expires=1441000000&Signature=vjbyPxybdZaNmGa%2ByT272YEAiv4%3D";
    let listing =
        b"list-type=2&prefix=photos%2F&delimiter=%2F&max-keys=1000&continuation-token=abc&encoding-type=url";
    let now = 1_440_938_160;
    fuzz::run("authorization header", &[header, v2], |b| {
        let Ok(value) = http::HeaderValue::from_bytes(b) else { return };
        let req = Request::builder()
            .method(Method::GET)
            .uri("http://s3.example.com/bucket/key")
            .header("host", "s3.example.com")
            .header("x-amz-date", "20150830T123600Z")
            .header("x-amz-content-sha256", "UNSIGNED-PAYLOAD")
            .header(http::header::AUTHORIZATION, value)
            .body(())
            .expect("request");
        let (parts, ()) = req.into_parts();
        let _ = crate::access::verify_signature(&parts, &Secrets, "us-east-1", now, None);
    });
    fuzz::run("query string", &[presigned, v2q, listing], |b| {
        let q = text(b);
        let _ = crate::router::parse_query(&q);
        let _ = crate::router::route(&Method::GET, "/bucket/key", &q, Some("s3.example.com"), None);
        let _ = crate::router::route(
            &Method::POST,
            "/bucket",
            &q,
            Some("bucket.s3.example.com"),
            Some("s3.example.com"),
        );
        let Ok(uri) = format!("http://s3.example.com/bucket/key?{q}").parse::<http::Uri>() else { return };
        let req = Request::builder().uri(uri).header("host", "s3.example.com").body(()).expect("request");
        let (parts, ()) = req.into_parts();
        let _ = crate::access::verify_signature(&parts, &Secrets, "us-east-1", now, None);
        let _ = crate::sigv2::verify_query(&parts, &Secrets, now, Some("bucket"));
    });
}

/// aws-chunked bodies (signed and unsigned, with trailers), fed whole and split at every point.
#[test]
fn fuzz_aws_chunked() {
    let plain = b"5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n";
    let signed = b"5;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\nhello\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n";
    let signer = strata_sign::sigv4::ChunkSigner {
        key: strata_sign::sigv4::signing_mac("secret", "20130524", "us-east-1", "s3"),
        amz_date: "20130524T000000Z".into(),
        scope: "20130524/us-east-1/s3/aws4_request".into(),
        previous: "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9".into(),
    };
    fuzz::run("aws-chunked", &[plain, signed], |b| {
        for signer in [None, Some(signer.clone())] {
            let mut d = crate::chunked::ChunkedDecoder::new(signer);
            let mut out = Vec::new();
            let cut = b.len() / 2;
            if d.feed(Bytes::copy_from_slice(&b[..cut]), &mut out).is_ok() {
                let _ = d.feed(Bytes::copy_from_slice(&b[cut..]), &mut out);
            }
            let _ = d.is_done();
        }
    });
}

/// Request lines and headers → route → the authorization table: never a panic, whatever the
/// path, query, tagging or copy-source header says. Input: path, query, then `name: value` lines.
#[test]
fn fuzz_authorization_table() {
    use crate::authz::{authorization, AuthType, Facts};
    let corpus: &[&[u8]] = &[
        b"/b/k\nversionId=v1&tagging\nx-amz-tagging: a=1&b%20c=2\nx-amz-acl: private",
        b"/b/k\npartNumber=1&uploadId=u\nx-amz-copy-source: /src/a%20b?versionId=3\nx-amz-tagging-directive: REPLACE",
        b"/b\nlist-type=2&prefix=home%2F&delimiter=%2F&max-keys=10\nx-amz-content-sha256: UNSIGNED-PAYLOAD",
        b"/\n\nx-amz-object-ownership: ObjectWriter\nx-amz-bucket-object-lock-enabled: true",
    ];
    let facts = Facts {
        source_ip: Some(std::net::Ipv4Addr::LOCALHOST.into()),
        secure_transport: true,
        now_unix_secs: u64::MAX,
        auth: AuthType::Post { v4: false },
    };
    fuzz::run("authorization table", corpus, |b| {
        let input = text(b);
        let mut lines = input.lines();
        let (path, query) = (lines.next().unwrap_or("/"), lines.next().unwrap_or(""));
        let mut headers = http::HeaderMap::new();
        for line in lines {
            let Some((name, value)) = line.split_once(':') else { continue };
            let (Ok(name), Ok(value)) = (
                http::HeaderName::from_bytes(name.trim().as_bytes()),
                http::HeaderValue::from_str(value.trim()),
            ) else {
                continue;
            };
            headers.append(name, value);
        }
        for method in [Method::GET, Method::PUT, Method::POST, Method::DELETE, Method::HEAD] {
            if let Ok(route) =
                crate::router::route_with_headers(&method, path, query, &headers, Some("s3.local"))
            {
                let _ = authorization(&route, &headers, &facts);
            }
        }
    });
}

/// Browser POST form bodies through multer and the field reader, the file field read to its
/// end: refused or read, never a panic or a hang.
#[test]
fn fuzz_post_form_bodies() {
    let form = b"--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nuser/${filename}\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"Policy\"\r\n\r\neyJleHBpcmF0aW9uIjoiMjAzMCJ9\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"x-amz-meta-tag\"\r\n\r\nv\xc3\xa9\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\n\
hello file\r\n--XyZ\r\nContent-Disposition: form-data; name=\"after\"\r\n\r\nignored\r\n--XyZ--\r\n";
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let read = |body: &[u8]| {
        let body = bytes::Bytes::copy_from_slice(body);
        runtime.block_on(async move {
            // Delivered in two pieces, so multer also meets a boundary split across reads.
            let cut = body.len() / 2;
            let pieces = vec![Ok::<_, std::io::Error>(body.slice(..cut)), Ok(body.slice(cut..))];
            let mut multipart = multer::Multipart::new(futures_util::stream::iter(pieces), "XyZ");
            let mut content = Vec::new();
            let (form, mut file) = crate::post::read_fields(&mut multipart).await.ok()?;
            while let Ok(Some(chunk)) = file.chunk().await {
                content.extend_from_slice(&chunk);
            }
            Some((form.get("key").map(str::to_owned), content))
        })
    };
    // The unmutated form reads whole: the target exercises the real path.
    assert_eq!(read(form), Some((Some("user/${filename}".to_owned()), b"hello file".to_vec())));
    fuzz::run("POST form body", &[form.as_slice()], |b| {
        read(b);
    });
}
