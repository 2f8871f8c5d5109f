//! Wall-clock seconds: `std::time::Instant` panics on wasm32-unknown-unknown, so the web
//! build reads the JS clock instead.

#[cfg(not(target_arch = "wasm32"))]
pub fn now_seconds() -> f64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64()
}

#[cfg(target_arch = "wasm32")]
pub fn now_seconds() -> f64 {
    js_sys::Date::now() / 1000.0
}
