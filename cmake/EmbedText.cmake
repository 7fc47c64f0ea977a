# cmake -DINPUT=file -DOUTPUT=file.cpp -DNAME=symbol -P EmbedText.cmake
# Writes `extern const char NAME[] = "<contents of INPUT>";` to OUTPUT.
file(READ "${INPUT}" text)
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "\n" "\\n\"\n\"" text "${text}")
file(WRITE "${OUTPUT}" "// Generated from ${INPUT} by EmbedText.cmake.\n"
  "extern const char ${NAME}[] = \"${text}\";\n")
