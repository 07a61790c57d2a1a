msgid "x"
