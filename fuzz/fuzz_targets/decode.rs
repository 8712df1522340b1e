//! Parameter values, stored rows and stored updates through ripple's
//! decoders (`ripple::server::fuzz_decode`): no input may panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ripple::server::fuzz_decode::decode(data);
});
