from whisper_subtitler.cli import main

main()
