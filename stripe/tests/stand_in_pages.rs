//! The stand-in's own pages over HTTP, as a browser's script drives them: the 3-D
//! Secure challenge and the hosted Checkout page serve the element ids the module
//! documentation names, their `POST`s move the objects as documented, and a page
//! whose object no longer waits offers no button.

mod stand_in;

use serde_json::{Value, json};
use stand_in::{SECRET, StandIn};

async fn page(url: &str) -> (u16, String) {
    let response = reqwest::get(url).await.expect("the page");
    (
        response.status().as_u16(),
        response.text().await.expect("its body"),
    )
}

async fn post(url: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .form(form)
        .send()
        .await
        .expect("the post");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Creates and confirms an intent with `payment_method`; its JSON.
async fn intent(stand_in: &StandIn, key: &str, payment_method: &str) -> Value {
    reqwest::Client::new()
        .post(format!("{}/v1/payment_intents", stand_in.url()))
        .bearer_auth(SECRET)
        .header("Idempotency-Key", key)
        .form(&[
            ("amount", "1250"),
            ("currency", "eur"),
            ("confirm", "true"),
            ("payment_method", payment_method),
            ("payment_method_types[0]", "card"),
            ("metadata[journal_key]", key),
        ])
        .send()
        .await
        .expect("the create")
        .json()
        .await
        .expect("an intent")
}

/// Creates an open session; its JSON.
async fn session(stand_in: &StandIn, key: &str) -> Value {
    let expires_at = (stand_in.now() + 3_600).to_string();
    reqwest::Client::new()
        .post(format!("{}/v1/checkout/sessions", stand_in.url()))
        .bearer_auth(SECRET)
        .header("Idempotency-Key", key)
        .form(&[
            ("mode", "payment"),
            ("line_items[0][price_data][currency]", "eur"),
            ("line_items[0][price_data][unit_amount]", "1250"),
            ("line_items[0][price_data][product_data][name]", "Order"),
            ("line_items[0][quantity]", "1"),
            (
                "success_url",
                "http://127.0.0.1:1/back?s={CHECKOUT_SESSION_ID}",
            ),
            ("cancel_url", "http://127.0.0.1:1/cart"),
            ("expires_at", expires_at.as_str()),
            ("metadata[journal_key]", key),
            ("payment_intent_data[metadata][journal_key]", key),
        ])
        .send()
        .await
        .expect("the create")
        .json()
        .await
        .expect("a session")
}

#[tokio::test]
async fn the_challenge_page_passes_or_fails_the_intent_and_sends_the_browser_back() {
    let stand_in = StandIn::start().await;
    for (n, outcome, status) in [
        (1, "pass", "succeeded"),
        (2, "fail", "requires_payment_method"),
    ] {
        let intent = intent(
            &stand_in,
            &format!("cj1-{n}"),
            "pm_card_authenticationRequired",
        )
        .await;
        assert_eq!(intent["status"], "requires_action");
        let secret = intent["client_secret"].as_str().expect("a secret");
        let url = format!(
            "{}/stand-in/authenticate?client_secret={secret}&return_url=http://127.0.0.1:1/back",
            stand_in.url()
        );
        let (code, html) = page(&url).await;
        assert_eq!(code, 200);
        for id in [
            "id=\"authenticate-pass\"",
            "id=\"authenticate-fail\"",
            "id=\"status\">requires_action<",
            "data-done=\"false\"",
        ] {
            assert!(html.contains(id), "{id} in {html}");
        }
        let (code, answer) = post(
            &format!("{}/stand-in/authenticate", stand_in.url()),
            &[
                ("client_secret", secret),
                ("outcome", outcome),
                ("return_url", "http://127.0.0.1:1/back"),
            ],
        )
        .await;
        assert_eq!(
            (code, answer),
            (
                200,
                json!({"status": status, "redirect": "http://127.0.0.1:1/back"})
            )
        );
        // Answered: no button any more, and a second answer is refused.
        let (_, html) = page(&url).await;
        assert!(!html.contains("authenticate-pass"), "{html}");
        assert!(html.contains(&format!("id=\"status\">{status}<")));
        let again = post(
            &format!("{}/stand-in/authenticate", stand_in.url()),
            &[("client_secret", secret), ("outcome", "pass")],
        )
        .await;
        assert_eq!(again.0, 409);
    }
    assert_eq!(
        page(&format!(
            "{}/stand-in/authenticate?client_secret=nope",
            stand_in.url()
        ))
        .await
        .0,
        404
    );
    stand_in.assert_schemas_held();
}

#[tokio::test]
async fn the_hosted_page_pays_at_once_or_later_and_sends_the_browser_back() {
    let stand_in = StandIn::start().await;
    for (n, outcome) in [(1, "card"), (2, "delayed")] {
        let session = session(&stand_in, &format!("cj1-s{n}")).await;
        let id = session["id"].as_str().expect("an id");
        let url = session["url"].as_str().expect("its page");
        assert_eq!(url, format!("{}/stand-in/checkout/{id}", stand_in.url()));
        let (code, html) = page(url).await;
        assert_eq!(code, 200);
        for element in [
            "id=\"pay-card\"",
            "id=\"pay-delayed\"",
            "id=\"cancel\" href=\"http://127.0.0.1:1/cart\"",
            "id=\"amount\">1250<",
            "id=\"currency\">eur<",
            "id=\"status\">open<",
        ] {
            assert!(html.contains(element), "{element} in {html}");
        }
        let (code, answer) = post(url, &[("outcome", outcome)]).await;
        assert_eq!(code, 200);
        assert_eq!(
            answer["redirect"],
            json!(format!("http://127.0.0.1:1/back?s={id}"))
        );
        let (_, html) = page(url).await;
        assert!(
            !html.contains("pay-card") && html.contains("id=\"status\">complete<"),
            "{html}"
        );
        assert_eq!(post(url, &[("outcome", "card")]).await.0, 409, "paid once");
        let now = stand_in
            .sessions()
            .into_iter()
            .find(|s| s["id"] == id)
            .expect("the session");
        let paid = if outcome == "card" { "paid" } else { "unpaid" };
        assert_eq!(now["payment_status"], paid);
        let settle = format!("{url}/settle");
        if outcome == "delayed" {
            assert_eq!(
                post(&settle, &[("outcome", "succeeded")]).await,
                (200, json!({"status": "succeeded"}))
            );
            let now = stand_in
                .sessions()
                .into_iter()
                .find(|s| s["id"] == id)
                .expect("the session");
            assert_eq!(now["payment_status"], "paid");
        }
        assert_eq!(
            post(&settle, &[("outcome", "succeeded")]).await.0,
            409,
            "nothing waits"
        );
    }
    // An expired session's page offers nothing.
    let session = session(&stand_in, "cj1-s3").await;
    let url = session["url"].as_str().expect("its page");
    stand_in.advance(3_600);
    let (_, html) = page(url).await;
    assert!(
        !html.contains("pay-card") && html.contains("id=\"status\">expired<"),
        "{html}"
    );
    assert_eq!(post(url, &[("outcome", "card")]).await.0, 409);
    stand_in.assert_schemas_held();
}
