//! The stored form of a response: byte for byte, the allowed headers only, strict on
//! the way back, and refused whole above the journal's bound.

use super::*;
use http::HeaderMap;

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(*name, HeaderValue::from_static(value));
    }
    map
}

#[test]
fn a_response_round_trips_byte_for_byte_with_its_allowed_headers() {
    let body = Bytes::from_static(b"{\"id\":\"n_1\"}\n\xff\x00 not utf-8");
    let sent = headers(&[
        ("content-type", "application/json"),
        ("set-cookie", "session=CANARY"),
        ("link", "</a>; rel=\"next\""),
        ("authorization", "Bearer CANARY"),
        ("link", "</b>; rel=\"prev\""),
        ("location", "/v1/notes/n_1"),
        ("x-request-id", "CANARY"),
    ]);
    let stored = StoredResponse::new(StatusCode::CREATED, &sent, body.clone());
    let envelope = stored.envelope().expect("storable");
    assert!(
        !envelope.canonical().contains("CANARY"),
        "{}",
        envelope.canonical()
    );
    let back = StoredResponse::from_envelope(&envelope).expect("readable");
    assert_eq!(back, stored);
    let response = back.into_response();
    assert_eq!(response.status(), StatusCode::CREATED);
    let names: Vec<&str> = response.headers().keys().map(|n| n.as_str()).collect();
    assert_eq!(names, ["content-type", "link", "location"]);
    let links: Vec<&HeaderValue> = response.headers().get_all("link").iter().collect();
    assert_eq!(links, ["</a>; rel=\"next\"", "</b>; rel=\"prev\""]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let bytes = runtime.block_on(async {
        use http_body_util::BodyExt as _;
        response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes()
    });
    assert_eq!(bytes, body);
}

#[test]
fn the_allow_list_never_holds_a_credential_or_a_cookie() {
    for name in [
        "set-cookie",
        "set-cookie2",
        "cookie",
        "authorization",
        "proxy-authorization",
        "www-authenticate",
        "proxy-authenticate",
    ] {
        assert!(!STORED_HEADERS.contains(&name), "{name}");
    }
}

#[test]
fn which_statuses_are_stored() {
    for (status, stored) in [
        (200, true),
        (201, true),
        (204, true),
        (303, true),
        (400, true),
        (404, true),
        (409, true),
        (422, true),
        (401, false),
        (403, true),
        (407, false),
        (408, false),
        (425, false),
        (429, false),
        (500, false),
        (502, false),
        (503, false),
    ] {
        let status = StatusCode::from_u16(status).expect("a status");
        assert_eq!(is_stored(status), stored, "{status}");
    }
}

#[test]
fn a_response_over_the_bound_or_with_a_binary_header_is_unstorable() {
    let none = HeaderMap::new();
    let fits = Bytes::from(vec![b'a'; 12_000]);
    assert!(
        StoredResponse::new(StatusCode::OK, &none, fits)
            .envelope()
            .is_ok()
    );
    let over = Bytes::from(vec![b'a'; StoredResponse::body_limit() + 1]);
    assert_eq!(
        StoredResponse::new(StatusCode::OK, &none, over).envelope(),
        Err(Unstorable)
    );
    let mut binary = HeaderMap::new();
    binary.insert(
        "content-language",
        HeaderValue::from_bytes(b"caf\xe9").expect("an opaque value"),
    );
    assert_eq!(
        StoredResponse::new(StatusCode::OK, &binary, Bytes::new()).envelope(),
        Err(Unstorable)
    );
}

#[test]
fn any_other_envelope_is_refused() {
    let good =
        json!({"body": "YWJj", "format": FORMAT, "headers": [["etag", "\"1\""]], "status": 200});
    let read = |value: &Value| {
        StoredResponse::from_envelope(&ResultEnvelope::new(value).expect("an envelope"))
    };
    assert!(read(&good).is_some());
    let mut cases = Vec::new();
    for (key, value) in [
        ("format", json!("command-journal-http/response/2")),
        ("status", json!(500)),
        ("status", json!(99)),
        ("status", json!("200")),
        ("body", json!("YWJ")),
        ("body", json!("YWJk=")),
        ("body", json!(7)),
        ("headers", json!([["set-cookie", "a=b"]])),
        ("headers", json!([["etag"]])),
        ("headers", json!([["etag", "1", "2"]])),
        ("headers", json!({"etag": "1"})),
    ] {
        let mut changed = good.clone();
        changed[key] = value;
        cases.push(changed);
    }
    let mut extra = good.clone();
    extra["extra"] = json!(1);
    cases.push(extra);
    let mut missing = good.clone();
    missing
        .as_object_mut()
        .expect("an object")
        .remove("headers");
    cases.push(missing);
    for case in cases {
        assert_eq!(read(&case), None, "{case}");
    }
}
