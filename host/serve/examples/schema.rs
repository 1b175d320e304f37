//! Writes the protocol's JSON Schema, generated from the server's types, to stdout:
//! `cargo run -p prompt-host-serve --example schema > protocol/prompt-host.schema.json`.

fn main() {
    print!("{}", prompt_host_serve::protocol::schema::text());
}
