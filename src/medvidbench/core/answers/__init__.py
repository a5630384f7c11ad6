"""Reading and comparing answers, for any benchmark: named multiple-choice extractions
(:mod:`.choices`) and short-answer text metrics (:mod:`.text`)."""
