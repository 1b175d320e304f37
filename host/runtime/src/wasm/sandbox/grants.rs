//! What a plugin was granted, opened when it is loaded (the policy is `crate::policy::Grants`).

use crate::policy::Grants;

/// What a loaded plugin was granted, opened: each granted directory opened once, when the
/// plugin was loaded, and the granted variables' values read then. Every instance of the
/// plugin (the first, one re-made after a trap, a reload's) is handed these same handles,
/// never the paths: a granted directory renamed, or replaced by a symbolic link, after the
/// load cannot redirect what the plugin reads.
#[derive(Debug, Default)]
pub(crate) struct Granted {
    /// The opened directories, each with the guest path it is mounted at.
    pub(crate) dirs: Vec<GrantedDir>,
    /// The granted variables that were set, with their values at load.
    pub(crate) env: Vec<(String, String)>,
    /// The origins granted, their headers' secrets read at load (`None`: none granted,
    /// every request refused).
    #[cfg(feature = "http")]
    pub(crate) egress: Option<std::sync::Arc<crate::wasm::egress::Egress>>,
}

/// One granted directory, opened.
#[derive(Debug)]
pub(crate) struct GrantedDir {
    /// The directory's handle (read-only, opened without following anything swapped in
    /// later).
    pub(crate) handle: std::fs::File,
    /// Where the plugin sees it.
    pub(crate) guest: String,
}

impl Grants {
    /// Open what is granted (see [`Granted`]). The error names the directory and the guest
    /// path it was granted at.
    pub(crate) fn open(&self) -> Result<Granted, String> {
        let mut dirs = Vec::with_capacity(self.dirs.len());
        for grant in &self.dirs {
            // A checked grant's path is canonical: a symbolic link in it now was put there
            // since, and is refused rather than followed.
            let opened = if grant.checked {
                crate::fsutil::open_dir_without_symlinks(&grant.host)
            } else {
                crate::fsutil::open_dir(&grant.host)
            };
            let handle = opened.map_err(|e| {
                format!(
                    "cannot open the granted directory {} (for {}): {e}",
                    grant.host.display(),
                    grant.guest
                )
            })?;
            dirs.push(GrantedDir {
                handle,
                guest: grant.guest.clone(),
            });
        }
        Ok(Granted {
            dirs,
            env: self.env_values(),
            #[cfg(feature = "http")]
            egress: self.open_egress()?,
        })
    }

    /// The granted origins with their headers' `${env:NAME}` read now, and the TLS roots of
    /// each (the platform's, and its `ca_file`). The error names the grant's key, never a
    /// value.
    #[cfg(feature = "http")]
    fn open_egress(&self) -> Result<Option<std::sync::Arc<crate::wasm::egress::Egress>>, String> {
        use prompt_host_peer::egress::HttpGrant;
        if self.http.is_empty() {
            return Ok(None);
        }
        let mut grants = Vec::with_capacity(self.http.len());
        for (i, grant) in self.http.iter().enumerate() {
            let headers = grant.headers.iter().map(|(n, v)| (n.clone(), v.clone()));
            let opened = HttpGrant::new(&grant.origin, headers, |name| std::env::var(name).ok())
                .map_err(|e| format!("grants.http[{i}].{e}"))?;
            grants.push((opened, grant.ca_file.clone()));
        }
        let egress =
            crate::wasm::egress::Egress::new(grants).map_err(|e| format!("grants.http: {e}"))?;
        Ok(Some(std::sync::Arc::new(egress)))
    }
}
