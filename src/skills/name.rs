//! What a skill's (and a workflow step's) name may be: the one rule both are held to.

/// `^[a-zA-Z0-9][a-zA-Z0-9_-]*$`, at most 64 characters.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(msg!("empty"));
    }
    if name.chars().count() > 64 {
        return Err(msg!("longer than 64 characters"));
    }
    let mut chars = name.chars();
    let first = chars.next().unwrap_or(' ');
    if !first.is_ascii_alphanumeric() {
        return Err(msg!("must start with a letter or digit"));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(msg!(
            "character {bad:?} not allowed (letters, digits, `_` and `-` only)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_letters_digits_dashes_and_underscores() {
        assert!(check_name("a-b_c9").is_ok());
        assert!(check_name("-a").is_err());
        assert!(check_name("a b").is_err());
        assert!(check_name(&"x".repeat(65)).is_err());
    }
}
