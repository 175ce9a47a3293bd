//! The client against the server in this process: ranks over socket pairs and over TCP,
//! the KVS and barrier semantics, events, and everything a server must survive (strangers,
//! wrong keys and ids, garbage, truncated and endless lines, vanishing clients).

mod common;

use common::{TestServer, LIMIT};
use pmi::server::{ServerConfig, ServerEvent};
use pmi::{Client, PmiError, Version};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;
use std::thread;
use std::time::{Duration, Instant};

fn config(size: usize) -> ServerConfig {
    let mut config = ServerConfig::new(size);
    config.process_mapping = Some(pmi::mapping::encode(&vec![0; size]));
    config.handshake_timeout = Duration::from_millis(500);
    config
}

/// Runs one rank's put/fence/get of every card, in a thread.
fn exchange(settings: pmi::env::Settings) -> thread::JoinHandle<Result<Vec<String>, PmiError>> {
    thread::spawn(move || {
        let mut client = Client::connect(settings)?;
        let rank = client.rank();
        client.put("card", &format!("host=h{rank};port={}", 1000 + rank))?;
        client.fence()?;
        let cards = (0..client.size())
            .map(|r| client.get(r, "card"))
            .collect::<Result<Vec<_>, _>>()?;
        client.barrier()?;
        client.finalize()?;
        Ok(cards)
    })
}

#[test]
fn ranks_over_socket_pairs_and_tcp_exchange_cards() {
    let size = 4;
    let mut server = TestServer::start(config(size), &[0, 2], true);
    let key = server.key.to_hex();
    let ranks = vec![
        exchange(server.fd_settings(0, size)),
        exchange(server.tcp_settings(1, &key)),
        exchange(server.fd_settings(2, size)),
        exchange(server.tcp_settings(3, &key)),
    ];
    let expected: Vec<String> = (0..size)
        .map(|r| format!("host=h{r};port={}", 1000 + r))
        .collect();
    for rank in ranks {
        assert_eq!(rank.join().unwrap().unwrap(), expected);
    }
    let events = server.drain_events(Duration::from_millis(300));
    for rank in 0..size {
        assert!(
            events.contains(&ServerEvent::Initialized { rank }),
            "{events:?}"
        );
        assert!(
            events.contains(&ServerEvent::Finalized { rank }),
            "{events:?}"
        );
    }
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ServerEvent::ConnectionLost { .. })),
        "{events:?}"
    );
}

#[test]
fn what_the_client_learns_at_init() {
    let mut server = TestServer::start(config(2), &[1], true);
    let mut tcp = Client::connect(server.tcp_settings(0, &server.key.to_hex())).unwrap();
    let fd = Client::connect(server.fd_settings(1, 2)).unwrap();
    assert_eq!((tcp.rank(), tcp.size(), fd.rank(), fd.size()), (0, 2, 1, 2));
    assert_eq!(tcp.version(), Version::V1);
    assert_eq!(tcp.kvs_name(), server.kvs_name);
    assert_eq!(tcp.max_value_len(), 1023);
    assert_eq!(tcp.max_key_len(), 64 - 1 - "r1.".len());
    assert_eq!(
        tcp.process_mapping().unwrap().as_deref(),
        Some("(vector,(0,1,2))")
    );
    // Not fenced yet: not found, with the server's word for it.
    tcp.put("k", "v").unwrap();
    match tcp.get(0, "k") {
        Err(PmiError::NotFound {
            rank: 0,
            key,
            message,
        }) => {
            assert_eq!(key, "k");
            assert!(message.contains("not_found"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        tcp.get(2, "k"),
        Err(PmiError::NoSuchRank { rank: 2, .. })
    ));
    assert!(matches!(
        tcp.put("a b", "v"),
        Err(PmiError::InvalidKey { .. })
    ));
    assert!(matches!(
        tcp.put("k", ""),
        Err(PmiError::InvalidValue { .. })
    ));
    let long = "x".repeat(tcp.max_value_len() + 1);
    assert!(matches!(
        tcp.put("k", &long),
        Err(PmiError::InvalidValue { .. })
    ));
    let ok = "x".repeat(tcp.max_value_len());
    tcp.put("k", &ok).unwrap();
}

#[test]
fn a_pmi2_client_is_told_this_server_speaks_pmi1() {
    let mut server = TestServer::start(config(1), &[0], false);
    let mut settings = server.fd_settings(0, 1);
    settings.version = Version::V2;
    let error = Client::connect(settings).unwrap_err();
    assert!(
        matches!(
            &error,
            PmiError::Refused {
                command: "init",
                ..
            }
        ) && error.to_string().contains("MPI_PMI_VERSION"),
        "{error}"
    );
}

#[test]
fn abort_reaches_the_launcher_with_code_and_message() {
    let mut server = TestServer::start(config(2), &[0, 1], false);
    let mut client = Client::connect(server.fd_settings(0, 2)).unwrap();
    let other = exchange(server.fd_settings(1, 2));
    client.abort(7, "out of\nmemory; sorry").unwrap();
    let events = server.drain_events(Duration::from_millis(300));
    assert!(
        events.contains(&ServerEvent::Aborted {
            rank: 0,
            code: 7,
            message: "out of memory; sorry".into()
        }),
        "{events:?}"
    );
    // The other rank's fence fails instead of waiting forever.
    match other.join().unwrap() {
        Err(PmiError::Refused {
            command: "barrier",
            message,
            ..
        }) => {
            assert!(message.contains("rank_0_aborted"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_rank_that_vanishes_fails_the_barrier_and_is_reported() {
    let mut server = TestServer::start(config(3), &[0, 1, 2], false);
    let waiting = exchange(server.fd_settings(0, 3));
    let mut quitter = Client::connect(server.fd_settings(1, 3)).unwrap();
    quitter.put("card", "x").unwrap();
    drop(quitter);
    let error = waiting.join().unwrap().unwrap_err();
    assert!(error.to_string().contains("rank_1_lost"), "{error}");
    let events = server.drain_events(Duration::from_millis(300));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ServerEvent::ConnectionLost { rank: 1, .. })),
        "{events:?}"
    );
    // A rank that never spoke PMI and closes is no event.
    drop(server.fds.remove(&2));
    let events = server.drain_events(Duration::from_millis(300));
    assert!(!events
        .iter()
        .any(|e| matches!(e, ServerEvent::ConnectionLost { rank: 2, .. })));
}

/// Sends `lines` to the TCP port and returns everything the server says before it closes.
fn raw_tcp(server: &TestServer, lines: &[u8]) -> String {
    let mut stream = TcpStream::connect(server.port.unwrap()).unwrap();
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    stream.write_all(lines).unwrap();
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply
}

#[test]
fn strangers_and_wrong_keys_are_rejected_and_change_nothing() {
    let server = TestServer::start(config(2), &[], true);
    let key = server.key.to_hex();
    let mut wrong = server.key.to_hex();
    wrong.replace_range(0..1, if wrong.starts_with('0') { "1" } else { "0" });

    // Wrong key, missing key, garbage, another command first: refused before any rank is
    // claimed.
    for attempt in [
        format!("cmd=initack pmiid=0 jobkey={wrong}\n"),
        "cmd=initack pmiid=0\n".to_string(),
        "GET / HTTP/1.0\r\n\r\n".to_string(),
        "cmd=init pmi_version=1 pmi_subversion=1\n".to_string(),
        format!("cmd=initack pmiid=9 jobkey={key}\n"),
        format!("cmd=initack pmiid=x jobkey={key}\n"),
    ] {
        let reply = raw_tcp(&server, attempt.as_bytes());
        assert!(
            reply.starts_with("cmd=initack rc=-1 msg="),
            "{attempt:?} got {reply:?}"
        );
    }
    // The client side of a wrong key.
    let error = Client::connect(server.tcp_settings(0, &wrong)).unwrap_err();
    assert!(
        matches!(
            &error,
            PmiError::Refused {
                command: "initack",
                ..
            }
        ) && error.to_string().contains("job_key"),
        "{error}"
    );
    // Silence until the handshake deadline, and a half line then nothing.
    let started = Instant::now();
    assert!(raw_tcp(&server, b"").starts_with("cmd=initack rc=-1"));
    assert!(raw_tcp(&server, b"cmd=initack pmiid=0").starts_with("cmd=initack rc=-1"));
    assert!(started.elapsed() < Duration::from_secs(5));
    let events = server.drain_events(Duration::from_millis(300));
    assert!(events.len() >= 9, "{events:?}");
    assert!(
        events
            .iter()
            .all(|e| matches!(e, ServerEvent::Rejected { .. })),
        "{events:?}"
    );

    // Both ranks are still free: the real ranks get in and work.
    let ranks = [
        exchange(server.tcp_settings(0, &key)),
        exchange(server.tcp_settings(1, &key)),
    ];
    for rank in ranks {
        rank.join().unwrap().unwrap();
    }
    // A second connection for a connected rank is refused.
    let mut taken = Client::connect(server.tcp_settings(0, &key))
        .unwrap_err()
        .to_string();
    taken.make_ascii_lowercase();
    assert!(taken.contains("connected_already"), "{taken}");
}

#[test]
fn garbage_from_a_rank_gets_an_error_and_closes_only_that_connection() {
    let mut server = TestServer::start(config(3), &[0, 1, 2], false);
    let size = 3;
    let raw = |fd| {
        // SAFETY (test): the descriptor came from the server's socket pair for this test alone.
        unsafe { UnixStream::from_raw_fd(fd) }
    };
    let ask = |stream: &mut UnixStream, bytes: &[u8]| {
        stream.set_read_timeout(Some(LIMIT)).unwrap();
        stream.write_all(bytes).unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let mut rest = String::new();
        let _ = reader.read_to_string(&mut rest);
        (line, rest)
    };

    let mut garbage = raw(server.take_fd(0));
    let (line, rest) = ask(
        &mut garbage,
        b"cmd=init pmi_version=1 pmi_subversion=1\n\x01\x02 not pmi\n",
    );
    assert!(line.starts_with("cmd=response_to_init"), "{line}");
    assert!(rest.starts_with("cmd=error rc=-1 msg=malformed"), "{rest}");

    let mut endless = raw(server.take_fd(1));
    let mut long = b"cmd=put key=k value=".to_vec();
    long.extend(std::iter::repeat_n(b'x', 10_000));
    let (line, _) = ask(&mut endless, &long);
    assert!(
        line.starts_with("cmd=error rc=-1 msg=a_line_longer_than"),
        "{line}"
    );

    // The third rank is served as if nothing happened, and learns that the others are gone.
    let mut fine = Client::connect(server.fd_settings(2, size)).unwrap();
    fine.put("card", "ok").unwrap();
    let error = fine.fence().unwrap_err().to_string();
    assert!(error.contains("rank_0_lost"), "{error}");
    // An unknown command is answered and the connection stays.
    let events = server.drain_events(Duration::from_millis(300));
    assert!(
        events.contains(&ServerEvent::Initialized { rank: 2 }),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ServerEvent::ConnectionLost { rank: 0, detail } if detail.contains("malformed"))),
        "{events:?}"
    );
}

#[test]
fn unknown_commands_are_answered_and_the_connection_stays() {
    let mut server = TestServer::start(config(1), &[0], false);
    // SAFETY (test): the descriptor came from the server's socket pair for this test alone.
    let mut stream = unsafe { UnixStream::from_raw_fd(server.take_fd(0)) };
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut exchange = |request: &str| {
        stream.write_all(request.as_bytes()).unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        line
    };
    assert!(exchange("cmd=frobnicate\n").starts_with("cmd=error rc=-1"));
    assert_eq!(
        exchange("cmd=get_universe_size\n"),
        "cmd=universe_size rc=0 size=1\n"
    );
    assert_eq!(exchange("cmd=get_appnum\n"), "cmd=appnum rc=0 appnum=0\n");
    assert!(exchange("cmd=put kvsname=nope key=a value=b\n").starts_with("cmd=put_result rc=-1"));
    assert!(exchange("cmd=put key=a\n").starts_with("cmd=put_result rc=-1"));
    assert!(exchange("cmd=get key=PMI_process_mapping\n").starts_with("cmd=get_result rc=0"));
    assert_eq!(exchange("cmd=barrier_in\n"), "cmd=barrier_out rc=0\n");
    assert_eq!(exchange("cmd=finalize\n"), "cmd=finalize_ack rc=0\n");
}
