//! Writes generated reflow instances as REFLOW.md JSON files.
//! Usage: `geninst OUT_DIR SCALE:SEED...`, SCALE one of `studio`, `chain` (40 rooms), `large` (80 rooms),
//! and with engineers away (version 2) `studio-away`, `chain-away` (40 rooms), `chain300-away`.
//! Each file is `OUT_DIR/{SCALE}-{SEED}.json` = `studioflow_solver::generate::{studio,chain,large_chain}(SEED)`.

use studioflow_solver::{Instance, generate};

fn main() {
    let mut args = std::env::args().skip(1);
    let out = std::path::PathBuf::from(args.next().expect("usage: geninst OUT_DIR SCALE:SEED..."));
    std::fs::create_dir_all(&out).expect("creating OUT_DIR");
    for spec in args {
        let (scale, seed) = spec.split_once(':').expect("SCALE:SEED");
        let seed: u64 = seed.parse().expect("a numeric seed");
        let instance: Instance = match scale {
            "studio" => generate::studio(seed),
            "chain" => generate::chain(seed),
            "large" => generate::large_chain(seed),
            "studio-away" => generate::studio_away(seed),
            "chain-away" => generate::chain_away(seed),
            "chain300-away" => generate::chain_300_away(seed),
            other => panic!("unknown scale {other}"),
        };
        let path = out.join(format!("{scale}-{seed}.json"));
        std::fs::write(&path, serde_json::to_string_pretty(&instance).expect("json")).expect("writing");
        println!("{}", path.display());
    }
}
