"""The words the offline model reads a question by, in English, Spanish, German and French.

Every word is folded as :func:`agent.tools.topics.fold` folds a question's words: lower case,
no accents (``cómo`` is ``como``, ``möchte`` is ``mochte``), ``’`` written ``'``, and a
leading ``¿`` or ``¡`` dropped. :mod:`agent.question` says what each set does.
"""

from __future__ import annotations

JOINING = frozenset(
    {"and", "&", "also", "then", "plus", "besides"}
    | {"y", "e", "tambien", "ademas", "luego", "despues"}
    | {"und", "sowie", "auch", "dann", "danach", "außerdem", "ausserdem"}
    | {"et", "aussi", "puis", "ensuite"}
)
"""Words that may join two parts: ``and``, ``plus``, ``then``, ``y``, ``und``, ``et``..."""

JOINING_PHRASES: tuple[tuple[str, ...], ...] = (
    ("as", "well", "as"),
    ("asi", "como"),
    ("ainsi", "que"),
    ("de", "meme", "que"),
    ("after", "that"),
    ("after", "this"),
    ("despues", "de", "eso"),
    ("apres", "ca"),
    ("apres", "cela"),
    ("followed", "by"),
    ("along", "with"),
    ("together", "with"),
    ("in", "addition", "to"),
)
"""Several words that join as one: ``as well as``, ``así como``, ``ainsi que``, and the
``after that`` of a sequence (its ``that`` points at the part before, not into its own)."""

ALSO = frozenset({"also"})
"""After a comma, a sentence end or another joining word, always a new part."""

WH_WORDS = frozenset(
    {"what", "what's", "whats", "how", "how's", "why", "when", "where", "who", "which", "whose"}
    | {"que", "como", "porque", "cual", "cuales", "cuando", "donde", "quien", "quienes"}
    | {"cuanto", "cuanta", "cuantos", "cuantas"}
    | {"was", "wie", "warum", "wann", "wo", "wer", "welche", "welcher", "welches", "wieso"}
    | {"weshalb", "wozu", "wieviel"}
    | {"qu'est-ce", "quoi", "comment", "pourquoi", "quand", "ou", "qui", "quel", "quelle"}
    | {"quels", "quelles", "combien"}
)
"""Question words: a part that starts with one asks (it buys only with a verb and a price)."""

QUESTION_WORDS = WH_WORDS | frozenset(
    {"is", "are", "can", "could", "do", "does", "did", "should", "would", "will"}
    | {"puedes", "podrias", "kannst", "konnen", "konnten", "est-ce", "peux-tu", "pouvez-vous"}
)
"""Words a question may start with."""

OPENERS = QUESTION_WORDS | frozenset(
    {"tell", "explain", "show", "give", "describe", "define", "compare", "search", "find"}
    | {"look", "please", "help", "i", "i'd", "i'm", "i'll", "we", "we'd", "let's", "lets"}
    | {"explica", "explicame", "dime", "cuentame", "hablame", "muestrame", "describe"}
    | {"compara", "busca", "ayudame", "quiero", "quisiera", "necesito"}
    | {"erklare", "erklar", "zeige", "zeig", "sag", "sage", "beschreibe", "vergleiche"}
    | {"suche", "finde", "hilf", "bitte", "ich"}
    | {"explique", "expliquez", "explique-moi", "dis-moi", "montre", "montre-moi", "decris"}
    | {"cherche", "trouve", "aide-moi", "je", "j'aimerais", "j'ai"}
)
"""Words that start a new request, a question or an ask."""

BACK_REFERENCES = frozenset(
    {"it", "its", "it's", "they", "them", "their", "theirs", "this", "that", "these", "those"}
    | {"which", "eso", "esto", "ello", "lo", "le", "cual"}
    | {"er", "ihn", "ihm", "das", "dies", "diese", "dieser", "dieses", "dafur", "damit"}
    | {"dazu", "davon", "dabei", "welcher", "welches"}
    | {"ca", "cela", "ceci", "celui", "celle", "ceux", "celles", "lui", "lequel", "laquelle"}
)
"""Words that point back to what was asked before: ``it``, ``eso``, ``er``, ``ça``, and
the ``which`` of a choice ("X or Y, which should I use?")."""

BACK_REFERENCES_ARTICLES = frozenset({"le"})
"""Back references that are articles too (French ``le``): ``puis le sharding`` names a new
thing, so they do not keep a clause that names one with the part before."""

BACK_REFERENCES_LAST = frozenset({"es"})
"""Back references only as a clause's last word (German ``es``; Spanish ``es`` is "is")."""

BUY_VERBS = frozenset(
    {"buy"}
    | {"compra", "compre", "comprame", "comprar", "comprarme"}
    | {"kaufe", "kauf", "kaufen"}
    | {"achete", "achetez", "acheter", "achete-moi"}
)
"""Words that make a part a purchase, with a price or without (then it asks for one)."""

WANT_VERBS = frozenset(
    {"like", "want", "need", "take", "order", "purchase", "get"}
    | {"quiero", "quisiera", "necesito", "pide", "pideme"}
    | {"mochte", "hatte", "brauche", "bestelle", "bestellen", "nehme"}
    | {"voudrais", "veux", "aimerais", "commande", "commander", "prends"}
)
"""Words that make a part a purchase only when a price ends it (``I'd like a mouse for 20``)."""

BEFORE_ITEM = frozenset({"to", "me", "us", "myself", "gern", "gerne", "mir", "uns", "moi"})
"""Words between a purchase verb and its item (``buy me a mouse``, ``hätte gern eine Maus``)."""

PRICE_WORDS = frozenset({"for", "at", "por", "fur", "pour"})
"""Words a price follows: ``for 20``, ``at 4.50``, ``por 20``, ``für 20``, ``pour 20``."""

CURRENCIES = {
    **dict.fromkeys(("€", "eur", "euro", "euros"), "EUR"),
    **dict.fromkeys(("£", "gbp", "pound", "pounds", "sterling", "quid", "libras", "livres"), "GBP"),
    "pfund": "GBP",
    **dict.fromkeys(("¥", "jpy", "yen", "yenes"), "JPY"),
    **dict.fromkeys(("chf", "franc", "francs", "franken", "francos"), "CHF"),
    **dict.fromkeys(("₹", "inr", "rupee", "rupees", "rupias", "roupies"), "INR"),
    **dict.fromkeys(("cad", "aud", "mxn", "cny", "rmb", "yuan"), ""),  # each its own code
}
"""Money other than dollars, by its symbol or word (folded): ``45 euros``, ``€45``, ``EUR 45``.

The value is the ISO 4217 code; empty, the word is the code (``cad``: ``CAD``).
"""

CURRENCY_NAMES = {
    "EUR": "euros",
    "GBP": "pounds",
    "JPY": "yen",
    "CHF": "Swiss francs",
    "INR": "rupees",
    "CAD": "Canadian dollars",
    "AUD": "Australian dollars",
    "MXN": "Mexican pesos",
    "CNY": "yuan",
    "RMB": "yuan",
}
"""How an answer names a currency the shop does not charge in; any other is named by code."""

FILLERS = frozenset(
    {"dollars", "dollar", "usd", "bucks", "dolares", "dolar", "please", "thanks", "thank", "you"}
    | {"por", "favor", "gracias", "bitte", "danke", "kaufen", "bestellen", "merci", "svp"}
)
"""Words a purchase may end with after its price."""

EACH = frozenset(
    {"each", "apiece", "ea", "cada", "je", "jeweils", "stuck", "chacun", "chacune", "piece"}
    | {"unidad", "unite", "l'unite"}
)
"""Words after a price that make it a unit price: ``3 coffees for 4.50 each``."""

EACH_HELPERS = frozenset({"one", "uno", "una", "per", "pro", "la", "a", "item", "unit", "the"})
"""Words that may stand beside those: ``cada uno``, ``pro Stück``, ``a piece``."""

COUNTS = {
    **dict.fromkeys(("a", "an", "one", "un", "una", "uno", "ein", "eine", "einen", "une"), 1),
    **{w: n for n, w in enumerate("two three four five six seven eight nine ten".split(), 2)},
    **{w: n for n, w in enumerate("dos tres cuatro cinco seis siete ocho nueve diez".split(), 2)},
    **{w: n for n, w in enumerate("zwei drei vier funf sechs sieben acht neun zehn".split(), 2)},
    **{w: n for n, w in enumerate("deux trois quatre cinq six sept huit neuf dix".split(), 2)},
}
"""Counts written as words, for an item bought at a unit price."""

SUBJECTS = frozenset(
    {"i", "i'm", "im", "i've", "we", "we're", "we've", "my", "our", "it", "it's", "this"}
    | {"there", "they", "he", "she"}
    | {"yo", "estoy", "soy", "tengo", "uso", "usamos", "estamos", "somos", "tenemos"}
    | {"trabajo", "mi", "mis", "nuestro", "nuestra", "nuestros", "nuestras", "es", "hay"}
    | {"ich", "wir", "mein", "meine", "unser", "unsere", "hier"}
    | {"je", "j'ai", "j'utilise", "nous", "mon", "ma", "mes", "notre", "nos", "il", "elle"}
    | {"on", "c'est", "ce"}
)
"""Words a sentence that tells, rather than asks, often starts with: ``I am``, ``It runs``."""

ASKING = frozenset(
    {"want", "wanna", "need", "needs", "wonder", "wondering", "looking", "like", "love"}
    | {"curious", "confused", "understand", "know", "learn", "question", "questions", "help"}
    | {"explain", "tell", "show", "stuck", "problem", "issue", "error", "bug", "fails"}
    | {"quiero", "quisiera", "necesito", "pregunta", "saber", "entender", "entiendo"}
    | {"gustaria", "ayuda", "explica", "explicar", "problema", "error"}
    | {"mochte", "will", "brauche", "frage", "wissen", "verstehe", "verstehen", "hilfe"}
    | {"erklaren", "problem", "fehler"}
    | {"voudrais", "veux", "besoin", "savoir", "comprendre", "comprends", "aide"}
    | {"aimerais", "expliquer", "probleme", "erreur"}
)
"""Words that make a telling sentence ask after all: ``I want``, ``I don't understand``."""

GREETINGS = frozenset(
    {"hi", "hello", "hey", "there", "everyone", "thanks", "thank", "you", "good", "morning"}
    | {"hola", "buenas", "buenos", "dias", "gracias", "hallo", "servus", "moin", "danke"}
    | {"guten", "tag", "bonjour", "salut", "coucou", "merci"}
)
"""Words a greeting is made of: a part of only these asks nothing (``Hola,``)."""

NAMES_NOTHING = frozenset(
    {"a", "an", "the", "of", "in", "on", "at", "to", "from", "with", "without", "about", "into"}
    | {"by", "as", "is", "are", "was", "were", "be", "been", "am", "do", "does", "did", "done"}
    | {"have", "has", "had", "can", "could", "should", "would", "will", "may", "might", "must"}
    | {"not", "no", "yes", "me", "you", "your", "us", "our", "some", "any", "all", "every"}
    | {"each", "other", "others", "else", "too", "very", "just", "only", "really", "so", "such"}
    | {"same", "own", "rest", "everything", "anything", "something", "thing", "things", "stuff"}
    | {"etc", "way", "ways", "more", "most", "one", "ones", "work", "works", "working"}
    | {"worked", "use", "uses", "used", "using", "usage", "mean", "means", "happen", "happens"}
    | {"make", "makes", "get", "gets", "go", "goes", "explained", "explanation", "described"}
    | {"example", "examples", "detail", "details", "detailed", "briefly", "brief", "short"}
    | {"code", "sample", "samples", "snippet", "snippets", "demo", "overview", "summary"}
    | {"simple", "simply", "quickly", "step", "steps", "first", "firstly", "second", "secondly"}
    | {"third", "next", "after", "afterwards", "afterward", "before", "later", "finally"}
    | {"lastly", "last", "start", "begin", "difference", "differences", "between", "pros"}
    | {"cons", "like", "well", "ok", "okay", "now", "again", "either", "both"}
    | {"el", "la", "los", "las", "un", "una", "unos", "unas", "de", "del", "al", "en", "con"}
    | {"sin", "sobre", "para", "es", "son", "ser", "esta", "estan", "funciona", "funcionan"}
    | {"funcionar", "usa", "usan", "usar", "se", "mi", "tu", "su", "sus", "primero", "primera"}
    | {"antes", "entonces", "mas", "ejemplo", "ejemplos", "explicar"}
    | {"der", "die", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "ist"}
    | {"sind", "war", "funktioniert", "funktionieren", "benutzt", "nutzt", "verwendet", "mit"}
    | {"ohne", "uber", "von", "zu", "im", "am", "auf", "erst", "zuerst", "vorher", "nachher"}
    | {"spater", "noch", "mehr", "beispiel", "es", "mir", "mich"}
    | {"le", "les", "l'", "une", "des", "du", "d'", "est", "sont", "fonctionne", "fonctionnent"}
    | {"marche", "marchent", "utilise", "utiliser", "avec", "sans", "sur", "dans", "au", "aux"}
    | {"d'abord", "abord", "apres", "avant", "enfin", "plus", "exemple", "moi"}
)
"""Words that name no thing of their own: articles, prepositions, helpers, order words
(``first``, ``after``, ``before``, ``zuerst``, ``d'abord``) and the verbs every question uses
(``work``, ``use``, ``funciona``). A clause with any other word (beyond the sets above)
names something: it is searched, or named as not found, never dropped."""
