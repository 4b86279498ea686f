//! Directory listings the library shares (kernel sources and headers, baseline files).

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The files of `dir` whose extension is `ext` (without the dot), sorted by path; an unreadable
/// directory is an error naming it.
pub fn with_extension(dir: &Path, ext: &str) -> Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io("listing", dir, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    paths.sort();
    Ok(paths)
}

/// The subdirectories of `dir`, sorted by path (one per GPU model under a baselines root); an
/// unreadable directory is an error naming it.
pub fn subdirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io("listing", dir, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    paths.sort();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_one_extension_sorted() {
        let d = tempfile::tempdir().unwrap();
        for n in ["b.cu", "a.cu", "c.cuh", "d.cu.bak", "e.json"] {
            std::fs::write(d.path().join(n), "").unwrap();
        }
        let names = |ext| -> Vec<String> {
            with_extension(d.path(), ext)
                .unwrap()
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
                .collect()
        };
        assert_eq!(names("cu"), ["a.cu", "b.cu"]);
        assert_eq!(names("cuh"), ["c.cuh"]);
        let err = with_extension(&d.path().join("missing"), "cu").unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
        std::fs::create_dir(d.path().join("z")).unwrap();
        std::fs::create_dir(d.path().join("y")).unwrap();
        let dirs: Vec<_> = subdirs(d.path())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        assert_eq!(dirs, ["y", "z"]);
    }
}
