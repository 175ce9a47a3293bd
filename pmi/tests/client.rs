//! The client against scripted fake servers: every way a reply can be wrong (malformed,
//! truncated, missing a field, rc != 0, a bad PMI-2 frame, no reply at all, a closed
//! connection) gives a typed error naming the command, never a panic or a hang.

mod common;

use common::settings;
use pmi::{Client, PmiError, Version};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::IntoRawFd;
use std::os::unix::net::UnixStream;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// One step of a fake server.
enum Step {
    /// Read a PMI-1 line that starts with this.
    Line(&'static str),
    /// Read a PMI-2 frame whose body starts with this.
    Frame(&'static str),
    /// Send these bytes.
    Send(Vec<u8>),
    /// Send a PMI-2 frame with this body (length padded on the right, as Slurm does).
    SendFrame(&'static str),
    /// Wait this long.
    Pause(Duration),
}

use Step::*;

fn send(text: &str) -> Step {
    Send(text.as_bytes().to_vec())
}

/// A fake process manager on a socket pair running `script`, then closing; the settings of
/// a client reaching it (with `extra` variables).
fn fake(script: Vec<Step>, extra: &[(&str, &str)]) -> (pmi::env::Settings, JoinHandle<()>) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let server = thread::spawn(move || {
        ours.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut reader = BufReader::new(ours.try_clone().unwrap());
        let mut writer = ours;
        for step in script {
            match step {
                Line(start) => {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    assert!(line.starts_with(start), "expected {start:?}, got {line:?}");
                }
                Frame(start) => {
                    let mut length = [0u8; 6];
                    if reader.read_exact(&mut length).is_err() {
                        return;
                    }
                    let length: usize = std::str::from_utf8(&length)
                        .unwrap()
                        .trim()
                        .parse()
                        .unwrap();
                    let mut body = vec![0u8; length];
                    reader.read_exact(&mut body).unwrap();
                    let body = String::from_utf8(body).unwrap();
                    assert!(body.starts_with(start), "expected {start:?}, got {body:?}");
                }
                Send(bytes) => {
                    let _ = writer.write_all(&bytes);
                }
                SendFrame(body) => {
                    let _ = writer.write_all(format!("{:<6}{body}", body.len()).as_bytes());
                }
                Pause(time) => thread::sleep(time),
            }
        }
    });
    let fd = theirs.into_raw_fd().to_string();
    let mut vars = vec![
        ("PMI_FD", fd.as_str()),
        ("PMI_RANK", "0"),
        ("PMI_SIZE", "2"),
        ("MPI_PMI_TIMEOUT", "5"),
    ];
    vars.extend_from_slice(extra);
    (settings(&vars), server)
}

fn v1_init() -> Vec<Step> {
    vec![
        Line("cmd=init pmi_version=1 pmi_subversion=1"),
        send("cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1\n"),
        Line("cmd=get_maxes"),
        send("cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024\n"),
        Line("cmd=get_my_kvsname"),
        send("cmd=my_kvsname rc=0 kvsname=kvs_7_0\n"),
    ]
}

fn v2_init() -> Vec<Step> {
    vec![
        Line("cmd=init pmi_version=2 pmi_subversion=0"),
        send("cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n"),
        Frame("cmd=fullinit;pmijobid=42.0;pmirank=0;threaded=FALSE;"),
        SendFrame("cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=0;size=2;appnum=-1;debugged=FALSE;pmiverbose=FALSE;"),
        Frame("cmd=job-getid;"),
        SendFrame("cmd=job-getid-response;rc=0;jobid=42.0;"),
    ]
}

/// Connects to a fake running `script` and returns the error, checking the fake's side.
fn connect_error(script: Vec<Step>, extra: &[(&str, &str)]) -> PmiError {
    let (settings, server) = fake(script, extra);
    let error = Client::connect(settings).expect_err("the client must fail");
    server.join().unwrap();
    error
}

fn with(mut steps: Vec<Step>, more: Vec<Step>) -> Vec<Step> {
    steps.extend(more);
    steps
}

#[test]
fn a_well_behaved_pmi1_server_works() {
    let script = with(
        v1_init(),
        vec![
            Line("cmd=put kvsname=kvs_7_0 key=r0.card value=a=1%3Bb=2"),
            send("cmd=put_result rc=0 msg=success\n"),
            Line("cmd=barrier_in"),
            Pause(Duration::from_millis(50)),
            send("cmd=barrier_out\n"),
            Line("cmd=get kvsname=kvs_7_0 key=r1.card"),
            send("cmd=get_result rc=0 msg=success value=x%20y\n"),
            Line("cmd=finalize"),
            send("cmd=finalize_ack\n"),
        ],
    );
    let (settings, server) = fake(script, &[]);
    let mut client = Client::connect(settings).unwrap();
    assert_eq!(
        (client.rank(), client.size(), client.kvs_name()),
        (0, 2, "kvs_7_0")
    );
    client.put("card", "a=1;b=2").unwrap();
    client.fence().unwrap();
    assert_eq!(client.get(1, "card").unwrap(), "x y");
    client.finalize().unwrap();
    server.join().unwrap();
}

#[test]
fn a_well_behaved_pmi2_server_works_slurm_style() {
    let script = with(
        v2_init(),
        vec![
            Frame("cmd=kvs-put;key=r0.card;value=a=1%3Bb=2;"),
            SendFrame("cmd=kvs-put-response;rc=0;"),
            Frame("cmd=kvs-fence;"),
            SendFrame("cmd=kvs-fence-response;rc=0;"),
            Frame("cmd=kvs-get;jobid=42.0;srcid=1;key=r1.card;"),
            SendFrame("cmd=kvs-get-response;rc=0;found=TRUE;value=v;"),
            Frame("cmd=kvs-get;jobid=42.0;srcid=1;key=r1.other;"),
            SendFrame("cmd=kvs-get-response;rc=0;found=FALSE;"),
            Frame("cmd=info-getjobattr;key=PMI_process_mapping;"),
            SendFrame("cmd=info-getjobattr-response;rc=0;found=TRUE;value=(vector,(0,1,2));"),
            Frame("cmd=abort;isworld=TRUE;exitcode=3;message=bye, now;"),
        ],
    );
    let (settings, server) = fake(script, &[("PMI_JOBID", "42.0")]);
    assert_eq!(settings.version, Version::V2);
    let mut client = Client::connect(settings).unwrap();
    assert_eq!(
        (client.rank(), client.size(), client.kvs_name()),
        (0, 2, "42.0")
    );
    assert_eq!(client.version(), Version::V2);
    assert_eq!(client.max_value_len(), 1023);
    client.put("card", "a=1;b=2").unwrap();
    client.fence().unwrap();
    assert_eq!(client.get(1, "card").unwrap(), "v");
    assert!(matches!(
        client.get(1, "other"),
        Err(PmiError::NotFound { rank: 1, .. })
    ));
    assert_eq!(
        client.process_mapping().unwrap().as_deref(),
        Some("(vector,(0,1,2))")
    );
    client.abort(3, "bye; now").unwrap();
    server.join().unwrap();
}

#[test]
fn malformed_and_unexpected_replies_name_the_command() {
    let error = connect_error(vec![Line("cmd=init"), send("hello there\n")], &[]);
    assert!(
        matches!(
            &error,
            PmiError::Malformed {
                command: "init",
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("hello there"), "{error}");

    let error = connect_error(vec![Line("cmd=init"), send("cmd=maxes rc=0\n")], &[]);
    assert!(
        error
            .to_string()
            .contains("expected cmd=response_to_init, got cmd=maxes"),
        "{error}"
    );

    let error = connect_error(
        vec![
            Line("cmd=init"),
            Send(b"cmd=response_to_init \xff\n".to_vec()),
        ],
        &[],
    );
    assert!(matches!(
        error,
        PmiError::Malformed {
            command: "init",
            ..
        }
    ));

    let mut script = v1_init();
    script.truncate(3);
    script.push(send("cmd=maxes rc=0 kvsname_max=256 vallen_max=1024\n"));
    let error = connect_error(script, &[]);
    assert!(
        matches!(&error, PmiError::Malformed { command: "get_maxes", problem, .. } if problem.contains("keylen_max")),
        "{error}"
    );

    let mut script = v1_init();
    script.truncate(3);
    script.push(send(
        "cmd=maxes rc=0 kvsname_max=256 keylen_max=lots vallen_max=1024\n",
    ));
    let error = connect_error(script, &[]);
    assert!(
        error.to_string().contains("\"lots\" is not a number"),
        "{error}"
    );

    let error = connect_error(
        vec![Line("cmd=init"), send("cmd=response_to_init rc=zero\n")],
        &[],
    );
    assert!(error.to_string().contains("rc=\"zero\""), "{error}");

    let error = connect_error(
        vec![
            Line("cmd=init"),
            send("cmd=response_to_init rc=0 pmi_version=2\n"),
        ],
        &[],
    );
    assert!(error.to_string().contains("version 2"), "{error}");

    let mut endless = b"cmd=response_to_init ".to_vec();
    endless.extend(std::iter::repeat_n(b'x', 70_000));
    let error = connect_error(vec![Line("cmd=init"), Send(endless)], &[]);
    assert!(error.to_string().contains("longer than"), "{error}");
}

#[test]
fn closed_and_truncated_connections() {
    let error = connect_error(vec![], &[]);
    assert!(
        matches!(
            error,
            PmiError::Closed {
                command: "init",
                ..
            }
        ),
        "{error}"
    );

    let error = connect_error(vec![Line("cmd=init"), send("cmd=response_to_in")], &[]);
    match &error {
        PmiError::Closed {
            command: "init",
            partial,
        } => assert_eq!(partial, "cmd=response_to_in"),
        other => panic!("{other}"),
    }
    assert!(
        error.to_string().contains("in the middle of a reply"),
        "{error}"
    );
}

#[test]
fn refusals_carry_rc_and_message() {
    let script = with(
        v1_init(),
        vec![
            Line("cmd=put"),
            send("cmd=put_result rc=-1 msg=kvs_full\n"),
            Line("cmd=barrier_in"),
            send("cmd=barrier_out rc=5 msg=rank_1_died\n"),
            Line("cmd=get"),
            send("cmd=get_result rc=-1 msg=key_r1.card_not_found\n"),
            Line("cmd=get"),
            send("cmd=get_result rc=0 msg=success\n"),
            Line("cmd=get"),
            send("cmd=get_result rc=0 msg=success value=%zz\n"),
        ],
    );
    let (settings, server) = fake(script, &[]);
    let mut client = Client::connect(settings).unwrap();
    match client.put("card", "x") {
        Err(PmiError::Refused {
            command: "put",
            rc: -1,
            message,
        }) => assert_eq!(message, "kvs_full"),
        other => panic!("{other:?}"),
    }
    let error = client.fence().unwrap_err();
    assert_eq!(
        error.to_string(),
        "PMI barrier: the process manager refused it (rc=5: rank_1_died)"
    );
    assert!(matches!(
        client.get(1, "card"),
        Err(PmiError::NotFound { rank: 1, .. })
    ));
    let error = client.get(1, "card").unwrap_err();
    assert!(error.to_string().contains("no value="), "{error}");
    let error = client.get(1, "card").unwrap_err();
    assert!(
        error.to_string().contains("not one this client put"),
        "{error}"
    );
    server.join().unwrap();
}

#[test]
fn bad_pmi2_frames() {
    let v2 = [("PMI_JOBID", "42.0")];
    let prefix = || {
        vec![
            Line("cmd=init pmi_version=2"),
            send("cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n"),
            Frame("cmd=fullinit"),
        ]
    };
    let error = connect_error(with(prefix(), vec![send("abcdefcmd=x;")]), &v2);
    assert!(
        matches!(&error, PmiError::Malformed { command: "fullinit", problem, .. } if problem.contains("length")),
        "{error}"
    );
    let error = connect_error(
        with(prefix(), vec![send("    40cmd=fullinit-response;rc=0;")]),
        &v2,
    );
    assert!(
        matches!(
            error,
            PmiError::Closed {
                command: "fullinit",
                ..
            }
        ),
        "{error}"
    );
    let error = connect_error(
        with(prefix(), vec![SendFrame("cmd=fullinit-response;garbage;")]),
        &v2,
    );
    assert!(
        error.to_string().contains("'garbage' is not key=value"),
        "{error}"
    );
    let error = connect_error(
        with(
            prefix(),
            vec![SendFrame("cmd=fullinit-response;rc=14;errmsg=nope;")],
        ),
        &v2,
    );
    assert!(
        matches!(&error, PmiError::Refused { command: "fullinit", rc: 14, message } if message == "nope"),
        "{error}"
    );
    // A server that answers a PMI-2 init with version 1.
    let error = connect_error(
        vec![
            Line("cmd=init pmi_version=2"),
            send("cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1\n"),
        ],
        &v2,
    );
    assert!(
        error.to_string().contains("does not speak PMI-2"),
        "{error}"
    );
}

#[test]
fn a_silent_server_times_out_instead_of_hanging() {
    let started = Instant::now();
    let error = connect_error(
        vec![Line("cmd=init"), Pause(Duration::from_millis(1500))],
        &[("MPI_PMI_TIMEOUT", "0.3")],
    );
    assert!(
        matches!(
            &error,
            PmiError::Timeout {
                command: "init",
                variable: "MPI_PMI_TIMEOUT",
                ..
            }
        ),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    // Fences wait as long as MPI_PMI_FENCE_TIMEOUT says.
    let script = with(
        v1_init(),
        vec![Line("cmd=barrier_in"), Pause(Duration::from_millis(1500))],
    );
    let (settings, server) = fake(script, &[("MPI_PMI_FENCE_TIMEOUT", "0.3")]);
    let mut client = Client::connect(settings).unwrap();
    let started = Instant::now();
    let error = client.fence().unwrap_err();
    assert!(
        matches!(
            &error,
            PmiError::Timeout {
                command: "barrier",
                variable: "MPI_PMI_FENCE_TIMEOUT",
                ..
            }
        ),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    drop(client);
    server.join().unwrap();
}

#[test]
fn bad_environments_are_explained() {
    let (settings, _) = (
        settings(&[("PMI_FD", "987"), ("PMI_RANK", "0"), ("PMI_SIZE", "1")]),
        (),
    );
    let error = Client::connect(settings).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("PMI_FD=987 is not an open descriptor"),
        "{error}"
    );

    // Nothing listens on this port (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let error = Client::connect(settings_for_port(&port.to_string())).unwrap_err();
    assert!(matches!(error, PmiError::Connect { .. }), "{error}");

    let (settings, server) = fake(vec![], &[]);
    let mut settings = settings;
    settings.size = None;
    let error = Client::connect(settings).unwrap_err();
    assert!(error.to_string().contains("PMI_SIZE is not set"), "{error}");
    server.join().unwrap();
}

fn settings_for_port(port: &str) -> pmi::env::Settings {
    settings(&[
        ("PMI_PORT", port),
        ("PMI_ID", "0"),
        ("MPI_PMI_TIMEOUT", "2"),
    ])
}
