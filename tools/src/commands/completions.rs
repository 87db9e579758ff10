//! `treelog completions`: a shell's completion script, generated from the CLI definition.

use crate::exit::CliError;
use crate::out::Out;

/// Print the completion script for a shell.
///
/// The script is generated from treelog's own command-line definition, so it always knows
/// every subcommand and option of this version. Install it where the shell looks, e.g.:
/// bash: `treelog completions bash > ~/.local/share/bash-completion/completions/treelog`;
/// zsh: `treelog completions zsh > ~/.zfunc/_treelog` (with `fpath+=~/.zfunc` before
/// `compinit` in ~/.zshrc); fish: `treelog completions fish >
/// ~/.config/fish/completions/treelog.fish`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Prints the script for `command`, the CLI definition.
pub fn run(args: Args, mut command: clap::Command, out: &mut Out) -> Result<(), CliError> {
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "treelog", &mut script);
    out.text_block(&String::from_utf8_lossy(&script))
}
