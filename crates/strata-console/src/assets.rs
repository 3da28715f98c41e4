//! The console's page and assets, part of the binary (no build step, no CDN, no external
//! fonts): `crates/strata-console/assets/`, hand-written HTML, CSS and JavaScript modules.

use std::sync::OnceLock;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode};

use crate::{json_error, Answer};

/// Each asset: its path under the console, content type and bytes.
const ASSETS: [(&str, &str, &[u8]); 11] = [
    ("/", HTML, include_bytes!("../assets/index.html")),
    ("/assets/app.css", "text/css; charset=utf-8", include_bytes!("../assets/app.css")),
    ("/assets/icon.svg", "image/svg+xml", include_bytes!("../assets/icon.svg")),
    ("/assets/app.js", JS, include_bytes!("../assets/app.js")),
    ("/assets/core.js", JS, include_bytes!("../assets/core.js")),
    ("/assets/buckets.js", JS, include_bytes!("../assets/buckets.js")),
    ("/assets/objects.js", JS, include_bytes!("../assets/objects.js")),
    ("/assets/versions.js", JS, include_bytes!("../assets/versions.js")),
    ("/assets/settings.js", JS, include_bytes!("../assets/settings.js")),
    ("/assets/identity.js", JS, include_bytes!("../assets/identity.js")),
    ("/assets/overview.js", JS, include_bytes!("../assets/overview.js")),
];
const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

/// Each asset's ETag (a digest of its bytes), made once.
fn etags() -> &'static [String] {
    static ETAGS: OnceLock<Vec<String>> = OnceLock::new();
    ETAGS.get_or_init(|| {
        ASSETS.iter().map(|(_, _, bytes)| format!("\"{}\"", &strata_sign::sha256_hex(bytes)[..32])).collect()
    })
}

/// The total bytes of the assets (the page's weight before compression).
pub fn total_bytes() -> usize {
    ASSETS.iter().map(|(_, _, b)| b.len()).sum()
}

/// `GET` of an asset: its bytes, or `304` when the browser has them (`If-None-Match`).
pub fn serve(path: &str, request: &HeaderMap) -> Answer {
    let Some(i) = ASSETS.iter().position(|(p, _, _)| *p == path) else {
        return json_error(StatusCode::NOT_FOUND, "NoSuchAsset", "The console has no such page.");
    };
    let (_, content_type, bytes) = ASSETS[i];
    let etag = &etags()[i];
    let mut headers = HeaderMap::new();
    headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Checked again on every load, so a new binary's console is never mixed with an old one's.
    headers.insert(http::header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(etag) {
        headers.insert(http::header::ETAG, v);
    }
    let cached =
        request.get(http::header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) == Some(etag.as_str());
    if cached {
        return Answer { status: StatusCode::NOT_MODIFIED, headers, body: Bytes::new() };
    }
    Answer { status: StatusCode::OK, headers, body: Bytes::from_static(bytes) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_are_served_with_their_type_and_revalidated() {
        let a = serve("/assets/app.js", &HeaderMap::new());
        assert_eq!(a.status, StatusCode::OK);
        assert!(a.headers[http::header::CONTENT_TYPE]
            .to_str()
            .is_ok_and(|t| t.starts_with("text/javascript")));
        let mut again = HeaderMap::new();
        again.insert(http::header::IF_NONE_MATCH, a.headers[http::header::ETAG].clone());
        assert_eq!(serve("/assets/app.js", &again).status, StatusCode::NOT_MODIFIED);
        assert_eq!(serve("/assets/nope.js", &HeaderMap::new()).status, StatusCode::NOT_FOUND);
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        // What would fetch from another origin: an absolute or scheme-relative address where a
        // page, a style sheet or a script loads something.
        let loads = [
            "src=\"http",
            "src=\"//",
            "href=\"http",
            "href=\"//",
            "url(http",
            "url(//",
            "from \"http",
            "import(\"http",
            "fetch(\"http",
            "@import",
        ];
        for (path, _, bytes) in ASSETS {
            let text = String::from_utf8_lossy(bytes);
            for load in loads {
                assert!(!text.contains(load), "{path} loads from elsewhere: {load}");
            }
        }
    }
}
