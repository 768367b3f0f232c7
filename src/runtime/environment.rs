//! The environment variables that tune the runtime, checked once before a backend starts.
//! Each is read where it is used, often lazily where no error can be returned (the memory
//! pool, the staged copies), and those readers fall back to defaults; so a value they would
//! ignore or clamp is refused here instead, naming the variable and what it takes.
//! (`PYGPU_BACKEND` is read, and refused, by the backend's selection itself.)

use super::{Error, Result};

enum Takes {
    /// On or off.
    Switch,
    /// A whole number in `low..=high`.
    Count { low: u64, high: u64 },
}

const VARIABLES: &[(&str, Takes)] = &[
    ("PYGPU_MEMORY_POOL", Takes::Switch),
    ("PYGPU_HOST_DEVICES", Takes::Count { low: 1, high: 64 }),
    ("PYGPU_STAGED_COPY", Takes::Switch),
    ("PYGPU_STAGED_COPY_MIN_BYTES", Takes::Count { low: 1, high: u64::MAX }),
    ("PYGPU_STAGED_COPY_CHUNK_BYTES", Takes::Count { low: 4096, high: 1 << 30 }),
    ("PYGPU_STAGED_COPY_BUFFERS", Takes::Count { low: 1, high: 64 }),
    ("PYGPU_STAGED_COPY_THREADS", Takes::Count { low: 1, high: 64 }),
];

const OFF: [&str; 4] = ["0", "off", "false", "no"];
const ON: [&str; 4] = ["1", "on", "true", "yes"];

/// Whether a switch's value turns it off (what the readers of the switches test).
pub(crate) fn switched_off(value: &str) -> bool {
    OFF.contains(&value.trim().to_ascii_lowercase().as_str())
}

/// Refuses a set variable whose value its reader would not take as given; `get` reads the
/// environment (a parameter, for the tests). Empty values count as unset.
pub(crate) fn check(get: impl Fn(&str) -> Option<String>) -> Result<()> {
    for (name, takes) in VARIABLES {
        let Some(value) = get(name).filter(|v| !v.trim().is_empty()) else { continue };
        let v = value.trim().to_ascii_lowercase();
        let expected = match takes {
            Takes::Switch if OFF.contains(&v.as_str()) || ON.contains(&v.as_str()) => continue,
            Takes::Switch => "0, off, false or no to turn it off; 1, on, true or yes to keep it on".to_string(),
            Takes::Count { low, high } if v.parse::<u64>().is_ok_and(|n| (*low..=*high).contains(&n)) => continue,
            Takes::Count { low, high } => format!("a whole number from {low} to {high}"),
        };
        return Err(Error::InvalidArgument(format!(
            "the environment variable {name}={value:?} is not valid: it takes {expected} (or unset it)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(pairs: &[(&str, &str)]) -> Result<()> {
        check(|name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn values_the_readers_would_ignore_are_refused_by_name() {
        assert!(checked(&[]).is_ok());
        assert!(
            checked(&[("PYGPU_MEMORY_POOL", "Off"), ("PYGPU_HOST_DEVICES", " 3 "), ("PYGPU_STAGED_COPY", "")]).is_ok()
        );
        let message = |pairs| match checked(pairs) {
            Err(Error::InvalidArgument(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(message(&[("PYGPU_MEMORY_POOL", "maybe")]).contains("PYGPU_MEMORY_POOL=\"maybe\""));
        assert!(message(&[("PYGPU_HOST_DEVICES", "abc")]).contains("from 1 to 64"));
        assert!(message(&[("PYGPU_HOST_DEVICES", "65")]).contains("PYGPU_HOST_DEVICES"));
        assert!(message(&[("PYGPU_STAGED_COPY_CHUNK_BYTES", "12")]).contains("from 4096"));
        assert!(switched_off(" OFF ") && !switched_off("1"));
    }
}
