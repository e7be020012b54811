//! A provider that notes whether the journal called it, for the request's log line
//! (`providerCalled`), around a provider that keeps no such note of its own (Stripe
//! Checkout's).

use command_journal::sends::{LookupRequest, RetrieveRequest};
use command_journal::{Provider, ProviderAnswer, SendRequest};
use std::sync::atomic::{AtomicBool, Ordering};

/// `provider`, noting any send, lookup or retrieve it is asked for.
#[derive(Debug)]
pub struct Called<P> {
    provider: P,
    called: AtomicBool,
}

impl<P: Provider> Called<P> {
    /// `provider`, not called yet.
    pub fn new(provider: P) -> Self {
        Self {
            provider,
            called: AtomicBool::new(false),
        }
    }

    /// Whether a send, a lookup or a retrieve was asked for.
    pub fn called(&self) -> bool {
        self.called.load(Ordering::Relaxed)
    }

    /// The provider inside.
    pub fn inner(&self) -> &P {
        &self.provider
    }
}

impl<P: Provider> Provider for Called<P> {
    async fn send(&self, request: SendRequest) -> ProviderAnswer {
        self.called.store(true, Ordering::Relaxed);
        self.provider.send(request).await
    }

    async fn lookup(&self, request: LookupRequest) -> ProviderAnswer {
        self.called.store(true, Ordering::Relaxed);
        self.provider.lookup(request).await
    }

    async fn retrieve(&self, request: RetrieveRequest) -> ProviderAnswer {
        self.called.store(true, Ordering::Relaxed);
        self.provider.retrieve(request).await
    }
}
