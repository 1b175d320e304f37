//! Outgoing HTTP for plugins granted origins (`grants.http`), through `wasi:http`.
//!
//! wasmtime-wasi-http turns a plugin's `outgoing-handler.handle` into an `http::Request` and
//! hands it to [`EgressHooks::send_request`]; from there the request is the host's: its
//! origin must be one the plugin was granted (a redirect is answered to the plugin, never
//! followed, so each hop is checked again), the connection goes to an address the host
//! resolved and checked itself ([`prompt_host_peer::egress`]), the grant's headers — the
//! secrets — are put on it here, out of the plugin's sight, and the response is bounded in
//! header count and size, body bytes and time. The time is the running call's: epoch
//! interruption does not reach host code, so a request ends by the call's deadline whatever
//! the peer does. A plugin without a grant has the import, and every request it makes is
//! refused (`HTTP-request-denied`).

mod exchange;
mod reach;

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime_wasi_http::{RequestOptions, WasiBody};

pub(crate) use reach::Egress;
use reach::Sent;

/// The `wasi:http` hooks of one store: the plugin's egress (none: every request refused),
/// and the running call's deadline, set each time wasmtime-wasi-http asks for the view.
pub(crate) struct EgressHooks {
    pub(crate) egress: Option<Arc<Egress>>,
    pub(crate) plugin: Arc<str>,
    pub(crate) deadline: Option<Instant>,
}

impl wasmtime_wasi_http::WasiHttpHooks for EgressHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn std::future::Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> Box<dyn std::future::Future<Output = Sent> + Send> {
        let egress = self.egress.clone();
        let plugin = self.plugin.clone();
        // Outside a call (never, for a plugin's import) a request gets the limit alone.
        let now = Instant::now();
        let limit = egress
            .as_ref()
            .map_or(Duration::ZERO, |e| e.limits.max_time);
        let deadline = self.deadline.map_or(now + limit, |d| d.min(now + limit));
        // Made here, on the plugin call's thread, so the request's span is the call's child.
        let span = exchange::span(&plugin, &request);
        let times = exchange::Times::new(deadline, options);
        Box::new(exchange::send(egress, plugin, request, times, span))
    }
}
