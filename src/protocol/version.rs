//! Protocol versioning: the current version and the two previous minor versions
//! of the same major are accepted; anything else is `UNSUPPORTED_VERSION`.

use super::error::{DelegationError, ErrorCode};

/// The version this runtime speaks.
pub const CURRENT: &str = "1.0";
const CURRENT_MAJOR: u32 = 1;
const CURRENT_MINOR: u32 = 0;
/// How many minor versions before the current one are still accepted.
const PREVIOUS_MINORS: u32 = 2;

/// Checks a `protocol_version` string such as `"1.0"`.
pub fn check(version: &str) -> Result<(), DelegationError> {
    let parsed = version
        .split_once('.')
        .and_then(|(major, minor)| Some((major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?)));
    let Some((major, minor)) = parsed else {
        return Err(DelegationError::new(
            ErrorCode::UnsupportedVersion,
            format!(
                "protocol_version '{}' is not MAJOR.MINOR; send \"{CURRENT}\"",
                version.chars().take(20).collect::<String>()
            ),
        ));
    };
    let oldest = CURRENT_MINOR.saturating_sub(PREVIOUS_MINORS);
    if major != CURRENT_MAJOR || minor > CURRENT_MINOR || minor < oldest {
        return Err(DelegationError::new(
            ErrorCode::UnsupportedVersion,
            format!(
                "protocol_version {major}.{minor} is not supported; this runtime speaks {CURRENT_MAJOR}.{oldest} to {CURRENT}: send \"{CURRENT}\""
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_version_is_accepted() {
        check("1.0").unwrap();
    }

    #[test]
    fn unknown_major_is_unsupported_version() {
        for v in ["2.0", "0.9", "9.1"] {
            let err = check(v).unwrap_err();
            assert_eq!(err.code, ErrorCode::UnsupportedVersion, "{v}");
            assert!(err.message.contains("send \"1.0\""), "{}", err.message);
        }
    }

    #[test]
    fn garbage_version_is_unsupported_version_with_guidance() {
        for v in ["", "one", "1", "1.x", "1.0.0"] {
            assert_eq!(check(v).unwrap_err().code, ErrorCode::UnsupportedVersion, "{v}");
        }
    }
}
