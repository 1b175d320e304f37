//! A real PostgreSQL for the store tests, from the distribution's binaries: a cluster made
//! with `initdb` in the temporary directory (as the `postgres` user when the tests run as root, which
//! PostgreSQL refuses to run as), trust authentication on a loopback port, started once per
//! test binary and stopped when the binary exits (the server gets SIGINT when the thread
//! that started it, which never ends, dies with the process). Each test gets a database of
//! its own. `PROMPT_HOST_TEST_POSTGRES` names a running server instead (a URL whose user may
//! create databases).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A server the tests may create databases on.
pub struct Postgres {
    /// `postgres://USER@HOST:PORT`, without a database.
    base: String,
    bin: PathBuf,
    host: String,
    port: u16,
    user: String,
}

/// The server, started on first use; `Err(why)` when none can run here.
pub fn server() -> Result<&'static Postgres, String> {
    static SERVER: OnceLock<Result<Postgres, String>> = OnceLock::new();
    SERVER.get_or_init(start).as_ref().map_err(Clone::clone)
}

impl Postgres {
    /// A new, empty database; its URL.
    pub fn database(&self) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "t{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let status = Command::new(self.bin.join("createdb"))
            .args([
                "-h",
                &self.host,
                "-p",
                &self.port.to_string(),
                "-U",
                &self.user,
                &name,
            ])
            .status()
            .expect("run createdb");
        assert!(status.success(), "createdb {name} failed");
        format!("{}/{name}", self.base)
    }

    /// Run `sql` on the database at `url` with psql; its output.
    pub fn psql(&self, url: &str, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args([url, "-v", "ON_ERROR_STOP=1", "-Atc", sql])
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "psql failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

fn start() -> Result<Postgres, String> {
    if let Ok(url) = std::env::var("PROMPT_HOST_TEST_POSTGRES") {
        let bin = bin_dir()?;
        let (user, host, port) = parse_base(&url)?;
        return Ok(Postgres {
            base: url.trim_end_matches('/').to_owned(),
            bin,
            host,
            port,
            user,
        });
    }
    let (bin, owner, dir, data) = init_cluster(&format!("postgres-{}", std::process::id()))?;
    let as_owner = move |cmd: &mut Command| as_user(cmd, owner);
    let port = free_port()?;
    let (bin2, data2, dir2) = (bin.clone(), data.clone(), dir.clone());
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    // The server is the child of a thread that lives as long as the process, so that the
    // parent-death signal reaches it when the test binary exits, and not before.
    std::thread::spawn(move || {
        let mut cmd = Command::new(bin2.join("postgres"));
        cmd.arg("-D")
            .arg(&data2)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
            .arg("-k")
            .arg(&dir2)
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(dir2.join("server.log")).map_or(Stdio::null(), Stdio::from),
            );
        as_owner(&mut cmd);
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: prctl only sets this process's parent-death signal.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT);
                    Ok(())
                });
            }
        }
        match cmd.spawn() {
            Ok(mut child) => {
                let _ = ready_tx.send(Ok(()));
                let _ = child.wait();
            }
            Err(e) => {
                let _ = ready_tx.send(Err(format!("postgres: {e}")));
            }
        }
        loop {
            std::thread::park();
        }
    });
    ready_rx
        .recv()
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ready = Command::new(bin.join("pg_isready"))
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"])
            .stdout(Stdio::null())
            .status()
            .map_err(|e| e.to_string())?;
        if ready.success() {
            break;
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
            return Err(format!("PostgreSQL did not start within a minute: {log}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(Postgres {
        base: format!("postgres://postgres@127.0.0.1:{port}"),
        bin,
        host: "127.0.0.1".into(),
        port,
        user: "postgres".into(),
    })
}

/// A cluster made with `initdb` in `target/tmp/NAME`: the binaries, the user it runs as (when
/// the tests run as root), its directory and its data directory.
#[allow(clippy::type_complexity)]
fn init_cluster(name: &str) -> Result<(PathBuf, Option<(u32, u32)>, PathBuf, PathBuf), String> {
    let bin = bin_dir()?;
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let owner = if root {
        Some(
            postgres_user()
                .ok_or("running as root and there is no postgres user to run PostgreSQL as")?,
        )
    } else {
        None
    };
    // In the system's temporary directory, not the checkout: the postgres user must be able
    // to reach it, and a checkout may sit below a directory only its owner can enter.
    let tmp = std::env::temp_dir();
    remove_stale_clusters(&tmp);
    let dir = tmp.join(format!("prompt-host-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let data = dir.join("data");
    if let Some((uid, gid)) = owner {
        chown(&dir, uid, gid)?;
    }
    let mut initdb = Command::new(bin.join("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args([
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-instructions",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    as_user(&mut initdb, owner);
    let out = initdb.output().map_err(|e| format!("initdb: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok((bin, owner, dir, data))
}

fn as_user(cmd: &mut Command, owner: Option<(u32, u32)>) {
    if let Some((uid, gid)) = owner {
        use std::os::unix::process::CommandExt;
        cmd.uid(uid).gid(gid);
    }
}

/// A cluster of one test's own, which it may stop and start again (`pg_ctl`); stopped when
/// dropped.
pub struct OwnCluster {
    bin: PathBuf,
    owner: Option<(u32, u32)>,
    dir: PathBuf,
    data: PathBuf,
    /// The loopback port it listens on.
    pub port: u16,
}

impl OwnCluster {
    /// Make and start one; `Err(why)` when none can run here.
    pub fn start(name: &str) -> Result<Self, String> {
        let (bin, owner, dir, data) =
            init_cluster(&format!("postgres-{}-{name}", std::process::id()))?;
        let cluster = Self {
            bin,
            owner,
            dir,
            data,
            port: free_port()?,
        };
        cluster.pg_ctl(&["start", "-w"])?;
        Ok(cluster)
    }

    /// `pg_ctl ARGS` on the cluster.
    pub fn pg_ctl(&self, args: &[&str]) -> Result<(), String> {
        let mut cmd = Command::new(self.bin.join("pg_ctl"));
        cmd.arg("-D").arg(&self.data).args(args);
        if args.first() == Some(&"start") {
            cmd.arg("-l")
                .arg(self.dir.join("server.log"))
                .arg("-o")
                .arg(format!(
                    "-p {} -c listen_addresses=127.0.0.1 -k {}",
                    self.port,
                    self.dir.display()
                ));
        }
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        as_user(&mut cmd, self.owner);
        let out = cmd.output().map_err(|e| format!("pg_ctl: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "pg_ctl {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// The URL of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = self.pg_ctl(&["stop", "-m", "immediate"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The newest installed PostgreSQL's binaries.
fn bin_dir() -> Result<PathBuf, String> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| {
            "PostgreSQL is not installed (no /usr/lib/postgresql; scripts/test --setup installs it)"
                .to_string()
        })?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found
        .pop()
        .ok_or_else(|| "PostgreSQL's server binaries are not installed".to_string())
}

fn postgres_user() -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&"postgres") && fields.len() > 3)
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
            .flatten()
    })
}

fn chown(path: &Path, uid: u32, gid: u32) -> Result<(), String> {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(|e| format!("chown: {e}"))
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// Clusters of test binaries that are no longer running.
fn remove_stale_clusters(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("prompt-host-postgres-"))
            .and_then(|p| p.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: kill with signal 0 only checks whether the process exists.
        if unsafe { libc::kill(pid, 0) } != 0 {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// `postgres://USER@HOST:PORT` → its user, host and port.
fn parse_base(url: &str) -> Result<(String, String, u16), String> {
    let rest = url
        .split_once("://")
        .map(|(_, r)| r)
        .ok_or("PROMPT_HOST_TEST_POSTGRES is not a URL")?;
    let (user, hostport) = rest.split_once('@').unwrap_or(("postgres", rest));
    let user = user.split(':').next().unwrap_or("postgres").to_owned();
    let hostport = hostport.trim_end_matches('/');
    let (host, port) = hostport.rsplit_once(':').unwrap_or((hostport, "5432"));
    Ok((
        user,
        host.to_owned(),
        port.parse()
            .map_err(|_| "bad port in PROMPT_HOST_TEST_POSTGRES")?,
    ))
}
