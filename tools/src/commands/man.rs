//! `treelog man`: manual pages in roff, generated from the CLI definition.

use std::path::PathBuf;

use crate::exit::CliError;
use crate::out::Out;

/// Print a manual page (roff, section 1), or write them all.
///
/// Without COMMAND: treelog(1), the tool and its subcommands; with one: that subcommand's
/// page, treelog-COMMAND(1), with every option. With --dir: every page, written to DIR as
/// treelog.1 and treelog-COMMAND.1. Generated from treelog's own command-line definition, so
/// they match `--help` of this version. To install them: `treelog man --dir
/// ~/.local/share/man/man1`, then `man treelog`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The subcommand whose page to print (default: treelog's own page).
    #[arg(conflicts_with = "dir")]
    pub command: Option<String>,
    /// Write every page into this directory instead of printing one.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Prints the page of `command` (the CLI definition) or of its subcommand `args.command`, or
/// writes every page.
pub fn run(args: Args, command: clap::Command, out: &mut Out) -> Result<(), CliError> {
    // `help` is a subcommand of the parser, not a page.
    let mut command = command.disable_help_subcommand(true);
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir)
            .map_err(|error| CliError::io(dir, "create the directory", error))?;
        clap_mangen::generate_to(command, dir)
            .map_err(|error| CliError::io(dir, "write the manual pages into", error))?;
        return out.line(&format!("wrote the manual pages into {}", dir.display()));
    }
    // Building fills in the names a page shows (`treelog-verify`, `treelog verify`).
    command.build();
    let page = match &args.command {
        None => command,
        Some(name) => command
            .get_subcommands()
            .find(|sub| sub.get_name() == name && !sub.is_hide_set())
            .cloned()
            .ok_or_else(|| {
                CliError::Usage(format!(
                    "no subcommand named {name}; `treelog --help` lists them"
                ))
            })?,
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut roff)
        .map_err(|error| CliError::io("<stdout>", "render the manual page", error))?;
    out.text_block(&String::from_utf8_lossy(&roff))
}
