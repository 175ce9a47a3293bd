//! Where the ranks run: `--hosts` and `--hostfile` parsing, Hydra's placement, which hosts are
//! this machine, the address ranks on another host reach `mpirun` at, and the command that
//! starts a rank there.
//!
//! **Host lists.** `--hosts a,b:2` and hostfiles in MPICH's format: one `host[:slots]` per
//! line, `#` starts a comment, blank lines are skipped. A host without a count has one slot.
//!
//! **Placement** ([`place`]), as Hydra's: fill each entry's slots in order, and wrap around
//! to the first entry while ranks remain. Ranks on one host name share a node number (the
//! order of first appearance), which is what `PMI_process_mapping` publishes.
//!
//! **Local hosts** ([`is_local`]): `localhost`, and this machine's host name, short or full.
//! Their ranks are started directly; the others through the launcher command
//! ([`remote_command`]): `CMD... HOST env NAME=VALUE... PROGRAM ARGS...`, each word after
//! `HOST` quoted for the remote shell (ssh hands the words to it joined by spaces).

use std::ffi::{OsStr, OsString};
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

/// One `host[:slots]` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostEntry {
    pub name: String,
    pub slots: usize,
}

/// Where one rank runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankPlace {
    pub host: String,
    /// The host is this machine: the rank is started directly.
    pub local: bool,
    /// The host's number among the distinct hosts, in order of first appearance.
    pub node: usize,
}

/// Parses the value of `--hosts` (`a,b:2,c`).
pub fn parse_host_list(list: &str) -> Result<Vec<HostEntry>, String> {
    let entries = list
        .split(',')
        .map(|item| parse_entry(item.trim()).map_err(|e| format!("--hosts '{list}': {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(entries)
}

/// Parses a hostfile's text; errors name the line.
pub fn parse_hostfile(text: &str) -> Result<Vec<HostEntry>, String> {
    let mut entries = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let content = line.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        entries.push(parse_entry(content).map_err(|e| format!("line {}: {e}", number + 1))?);
    }
    if entries.is_empty() {
        return Err("no hosts in it (lines are HOST or HOST:SLOTS)".into());
    }
    Ok(entries)
}

fn parse_entry(text: &str) -> Result<HostEntry, String> {
    let (name, slots) = match text.split_once(':') {
        None => (text, 1),
        Some((name, count)) => {
            let slots = count
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("'{text}': the slot count after ':' is a number from 1"))?;
            (name.trim(), slots)
        }
    };
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if !valid {
        return Err(format!(
            "'{text}' is not HOST or HOST:SLOTS (host names are letters, digits, '.', '-', '_')"
        ));
    }
    Ok(HostEntry {
        name: name.to_string(),
        slots,
    })
}

/// The entry (index into `entries`) of each of `nranks` ranks.
pub fn place(entries: &[HostEntry], nranks: usize) -> Vec<usize> {
    let mut placed = Vec::with_capacity(nranks);
    if entries.is_empty() {
        return placed;
    }
    'fill: loop {
        for (index, entry) in entries.iter().enumerate() {
            for _ in 0..entry.slots {
                if placed.len() == nranks {
                    break 'fill;
                }
                placed.push(index);
            }
        }
    }
    placed
}

/// Where each of `nranks` ranks runs, given the host entries (none: all on this machine)
/// and this machine's host name.
pub fn plan(entries: Option<&[HostEntry]>, nranks: usize, hostname: &str) -> Vec<RankPlace> {
    let Some(entries) = entries else {
        return vec![
            RankPlace {
                host: "localhost".into(),
                local: true,
                node: 0,
            };
            nranks
        ];
    };
    let mut nodes: Vec<&str> = Vec::new();
    place(entries, nranks)
        .into_iter()
        .map(|index| {
            let host = entries[index].name.as_str();
            let node = match nodes.iter().position(|n| n.eq_ignore_ascii_case(host)) {
                Some(node) => node,
                None => {
                    nodes.push(host);
                    nodes.len() - 1
                }
            };
            RankPlace {
                host: host.to_string(),
                local: is_local(host, hostname),
                node,
            }
        })
        .collect()
}

/// True if `host` names this machine, whose host name is `hostname`.
pub fn is_local(host: &str, hostname: &str) -> bool {
    let short = |name: &str| name.split('.').next().unwrap_or("").to_ascii_lowercase();
    let (host_l, hostname_l) = (host.to_ascii_lowercase(), hostname.to_ascii_lowercase());
    if host_l.is_empty() {
        return false;
    }
    if host_l == "localhost" || host_l == hostname_l {
        return true;
    }
    // "vm" and "vm.example.org" are one machine when either is the short form.
    !hostname_l.is_empty()
        && short(&host_l) == short(&hostname_l)
        && (!host_l.contains('.') || !hostname_l.contains('.'))
}

/// This machine's host name (as `hostname` prints it).
pub fn this_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_default()
}

/// The address of this machine that `host` would see traffic from: the source address the
/// kernel picks to route to it (a connected UDP socket; connecting one sends nothing).
pub fn address_towards(host: &str) -> io::Result<IpAddr> {
    let target = (host, 9)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "it resolves to no address"))?;
    let any: SocketAddr = match target {
        SocketAddr::V4(_) => "0.0.0.0:0".parse().expect("a valid address"),
        SocketAddr::V6(_) => "[::]:0".parse().expect("a valid address"),
    };
    let socket = UdpSocket::bind(any)?;
    socket.connect(target)?;
    Ok(socket.local_addr()?.ip())
}

/// `address:port` as `PMI_PORT` carries it (IPv6 in brackets).
pub fn pmi_port(address: IpAddr, port: u16) -> String {
    SocketAddr::new(address, port).to_string()
}

/// The command that starts a rank on `host`: the launcher's words, `host`, then `env`, the
/// variables, the program and its arguments, each quoted for the remote shell.
pub fn remote_command(
    launcher: &[OsString],
    host: &str,
    env: &[(OsString, OsString)],
    program: &Path,
    args: &[OsString],
) -> Vec<OsString> {
    let mut words: Vec<OsString> = launcher.to_vec();
    if launcher.first().is_some_and(|cmd| is_ssh(cmd)) {
        // After the user's own words (ssh takes the first value given for an option): no
        // password prompts, which would hang the job, and a bounded wait for the host.
        for option in ["BatchMode=yes", "ConnectTimeout=5"] {
            words.push("-o".into());
            words.push(option.into());
        }
    }
    words.push(host.into());
    words.push("env".into());
    for (name, value) in env {
        let mut setting = name.clone();
        setting.push("=");
        setting.push(value);
        words.push(shell_quote(&setting));
    }
    words.push(shell_quote(program.as_os_str()));
    words.extend(args.iter().map(|a| shell_quote(a)));
    words
}

fn is_ssh(command: &OsStr) -> bool {
    Path::new(command)
        .file_name()
        .is_some_and(|name| name == "ssh")
}

/// `word` as one word for a POSIX shell: as it is when that is safe, else in single quotes.
pub fn shell_quote(word: &OsStr) -> OsString {
    let bytes = word.as_bytes();
    let plain = !bytes.is_empty()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b));
    if plain {
        return word.to_os_string();
    }
    let mut quoted = Vec::with_capacity(bytes.len() + 2);
    quoted.push(b'\'');
    for &b in bytes {
        if b == b'\'' {
            quoted.extend_from_slice(b"'\\''");
        } else {
            quoted.push(b);
        }
    }
    quoted.push(b'\'');
    OsString::from_vec(quoted)
}

/// Variables of `mpirun`'s environment that only describe this host or this login session,
/// and so are not passed to ranks on other hosts (Hydra passes everything but `DISPLAY`).
const HOST_ONLY: &[&str] = &[
    "HOSTNAME",
    "HOST",
    "DISPLAY",
    "XAUTHORITY",
    "PWD",
    "OLDPWD",
    "SHLVL",
    "_",
    "SSH_CLIENT",
    "SSH_CONNECTION",
    "SSH_TTY",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "XDG_RUNTIME_DIR",
    "XDG_SESSION_ID",
    "XDG_SESSION_TYPE",
    "XDG_SESSION_CLASS",
    "XDG_SEAT",
    "XDG_VTNR",
    "DBUS_SESSION_BUS_ADDRESS",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "WINDOW",
    "WINDOWID",
    "KRB5CCNAME",
];

/// The part of `vars` passed explicitly to ranks on other hosts: all but [`HOST_ONLY`], the
/// names in `skip` (what `mpirun` sets itself), and names a shell could not take.
pub fn forwarded_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    skip: &[&str],
) -> Vec<(OsString, OsString)> {
    vars.into_iter()
        .filter(|(name, _)| {
            let Some(name) = name.to_str() else {
                return false;
            };
            let shell_name = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            shell_name && !HOST_ONLY.contains(&name) && !skip.contains(&name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, slots: usize) -> HostEntry {
        HostEntry {
            name: name.into(),
            slots,
        }
    }

    #[test]
    fn hostfiles_in_mpich_format() {
        let text = "# the cluster\n\nnode1:2\n  node2   # one slot\nnode3 : 4\n";
        assert_eq!(
            parse_hostfile(text).unwrap(),
            [entry("node1", 2), entry("node2", 1), entry("node3", 4)]
        );
        assert!(parse_hostfile("# nothing\n\n")
            .unwrap_err()
            .contains("no hosts"));
        let bad = parse_hostfile("a\nb:0\n").unwrap_err();
        assert!(bad.starts_with("line 2:"), "{bad}");
        assert!(parse_hostfile("a b\n").unwrap_err().starts_with("line 1:"));
        assert!(parse_hostfile("a:x\n").is_err());
        assert!(parse_hostfile(":2\n").is_err());
        assert_eq!(
            parse_host_list("a, b:3,c").unwrap(),
            [entry("a", 1), entry("b", 3), entry("c", 1)]
        );
        assert!(parse_host_list("a,,b").is_err());
    }

    #[test]
    fn placement_fills_slots_in_order_and_wraps_around() {
        let hosts = [entry("a", 2), entry("b", 1)];
        assert_eq!(place(&hosts, 2), [0, 0]);
        assert_eq!(place(&hosts, 3), [0, 0, 1]);
        assert_eq!(place(&hosts, 7), [0, 0, 1, 0, 0, 1, 0]);
        assert_eq!(place(&[entry("a", 1), entry("b", 1)], 4), [0, 1, 0, 1]);
        assert_eq!(place(&[entry("a", 8)], 3), [0, 0, 0]);
    }

    #[test]
    fn plans_name_hosts_nodes_and_locality() {
        let hosts = [entry("hostA", 1), entry("vm", 2), entry("hosta", 1)];
        let plan = plan(Some(&hosts), 5, "vm.example.org");
        let summary: Vec<(&str, bool, usize)> = plan
            .iter()
            .map(|p| (p.host.as_str(), p.local, p.node))
            .collect();
        assert_eq!(
            summary,
            [
                ("hostA", false, 0),
                ("vm", true, 1),
                ("vm", true, 1),
                ("hosta", false, 0),
                ("hostA", false, 0)
            ]
        );
        let alone = super::plan(None, 2, "vm");
        assert!(alone.iter().all(|p| p.local && p.node == 0));
    }

    #[test]
    fn local_hosts() {
        assert!(is_local("localhost", "vm"));
        assert!(is_local("LOCALHOST", ""));
        assert!(is_local("vm", "vm"));
        assert!(is_local("vm", "vm.example.org"));
        assert!(is_local("vm.example.org", "vm"));
        assert!(is_local("vm.example.org", "vm.example.org"));
        assert!(!is_local("vm.other.org", "vm.example.org"));
        assert!(!is_local("vm2", "vm"));
        assert!(!is_local("hostA", "vm"));
        assert!(!is_local("", ""));
    }

    #[test]
    fn remote_commands_quote_for_the_remote_shell() {
        let env = [
            (OsString::from("A"), OsString::from("1")),
            (OsString::from("B"), OsString::from("it's a b")),
        ];
        let words = remote_command(
            &["/tmp/launch".into()],
            "hostB",
            &env,
            Path::new("/bin/prog"),
            &["x y".into(), "-n".into()],
        );
        assert_eq!(
            words,
            [
                "/tmp/launch",
                "hostB",
                "env",
                "A=1",
                "'B=it'\\''s a b'",
                "/bin/prog",
                "'x y'",
                "-n"
            ]
        );
        let ssh = remote_command(
            &["ssh".into(), "-p".into(), "22".into()],
            "h",
            &[],
            Path::new("/p"),
            &[],
        );
        assert_eq!(
            ssh,
            [
                "ssh",
                "-p",
                "22",
                "-o",
                "BatchMode=yes",
                "-o",
                "ConnectTimeout=5",
                "h",
                "env",
                "/p"
            ]
        );
        assert_eq!(shell_quote(OsStr::new("")), "''");
    }

    #[test]
    fn host_only_and_odd_variables_stay_home() {
        let vars = [
            ("PATH", "/bin"),
            ("DISPLAY", ":0"),
            ("PWD", "/home"),
            ("BASH_FUNC_f%%", "() { :; }"),
            ("PMI_FD", "5"),
            ("LD_LIBRARY_PATH", "/opt/lib"),
        ]
        .map(|(n, v)| (OsString::from(n), OsString::from(v)));
        let names: Vec<OsString> = forwarded_env(vars, &["PMI_FD"])
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["PATH", "LD_LIBRARY_PATH"]);
    }

    #[test]
    fn the_address_towards_loopback_is_loopback() {
        assert!(address_towards("127.0.0.1").unwrap().is_loopback());
        assert_eq!(pmi_port("::1".parse().unwrap(), 5000), "[::1]:5000");
    }
}
