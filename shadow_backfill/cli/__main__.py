from shadow_backfill.cli.app import main

main()
