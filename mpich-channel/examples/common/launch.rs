//! What the examples share: starting themselves as a job.

/// Unless this process is a rank already, runs this program as a two-rank job with the same
/// arguments (ranks pinned to cores with `pinned`) and exits with the job's outcome.
pub fn as_two_ranks(pinned: bool) {
    if std::env::var_os("NIC_RANK").is_some() {
        return;
    }
    let mut cfg = nic_model::JobConfig::new(2);
    cfg.bind_cores = pinned;
    let job = nic_model::Job::new(&cfg).expect("creating the job");
    let exe = std::env::current_exe().unwrap();
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let mk = |_| {
        let mut c = std::process::Command::new(&exe);
        c.args(&args);
        c
    };
    let out = job
        .run(mk, std::time::Duration::from_secs(1), None)
        .expect("running the job");
    std::process::exit(if out.success() { 0 } else { 1 });
}
