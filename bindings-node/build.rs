//! Links the module the way Node loads it (napi-build: `-undefined dynamic_lookup` on macOS, the
//! N-API symbols resolved by the host at load time).
fn main() {
    napi_build::setup();
}
