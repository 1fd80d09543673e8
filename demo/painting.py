"""Painting the demo scenes with Pillow: a canvas, faces, stick figures, text, and one `draw_*` function per
scene (an ID card with a drawn face, a payment card, a prescription, a crowd...). Nothing here is real
data; demo.drawing lists the scenes with the labels each was meant to show."""
from __future__ import annotations

import random

from PIL import Image as PILImage
from PIL import ImageDraw, ImageFont

WIDTH, HEIGHT = 320, 240


def _font(size: int):
    return ImageFont.load_default(size=size)


def _canvas(color) -> tuple[PILImage.Image, ImageDraw.ImageDraw]:
    img = PILImage.new("RGB", (WIDTH, HEIGHT), color)
    return img, ImageDraw.Draw(img)


def _face(d: ImageDraw.ImageDraw, cx: int, cy: int, r: int, skin=(230, 190, 150), hair=(70, 45, 30), mood: str = "smile"):
    d.ellipse((cx - r, cy - r, cx + r, cy + r), fill=skin, outline=(60, 40, 30), width=2)
    d.chord((cx - r, cy - r, cx + r, cy + r // 3), 180, 360, fill=hair)
    e = max(2, r // 6)
    for ex in (cx - r // 3, cx + r // 3):
        d.ellipse((ex - e, cy - e, ex + e, cy + e), fill=(30, 30, 30))
    mouth = (cx - r // 3, cy + r // 4, cx + r // 3, cy + r // 2 + 4)
    if mood == "smile":
        d.arc(mouth, 0, 180, fill=(120, 30, 30), width=2)
    elif mood == "sad":
        d.arc((mouth[0], mouth[1] + 6, mouth[2], mouth[3] + 10), 180, 360, fill=(120, 30, 30), width=2)
        d.line((cx - r // 3, cy + e + 2, cx - r // 3, cy + e + 10), fill=(80, 140, 230), width=2)  # a tear
    else:
        d.line((mouth[0], mouth[1] + 4, mouth[2], mouth[1] + 4), fill=(120, 30, 30), width=2)


def _stick(d: ImageDraw.ImageDraw, x: int, y: int, s: float = 1.0, color=(40, 40, 40)):
    h = int(10 * s)
    d.ellipse((x - h, y - h, x + h, y + h), fill=color)
    d.line((x, y + h, x, y + int(45 * s)), fill=color, width=max(1, int(3 * s)))
    d.line((x - int(15 * s), y + int(22 * s), x + int(15 * s), y + int(22 * s)), fill=color, width=max(1, int(3 * s)))
    d.line((x, y + int(45 * s), x - int(12 * s), y + int(70 * s)), fill=color, width=max(1, int(3 * s)))
    d.line((x, y + int(45 * s), x + int(12 * s), y + int(70 * s)), fill=color, width=max(1, int(3 * s)))


def _text(d: ImageDraw.ImageDraw, xy, text: str, size: int = 14, fill=(20, 20, 20)):
    d.text(xy, text, fill=fill, font=_font(size))


def _lines(d: ImageDraw.ImageDraw, x: int, y: int, w: int, n: int, rng: random.Random, gap: int = 12, color=(150, 150, 150)):
    for i in range(n):
        d.line((x, y + i * gap, x + int(w * rng.uniform(0.5, 1.0)), y + i * gap), fill=color, width=3)


def draw_id_card(rng):
    img, d = _canvas((200, 210, 225))
    d.rounded_rectangle((20, 30, 300, 210), radius=14, fill=(245, 245, 235), outline=(40, 60, 120), width=3)
    d.rectangle((20, 30, 300, 60), fill=(40, 60, 120))
    _text(d, (30, 36), "NATIONAL IDENTITY CARD", 16, (255, 255, 255))
    d.rectangle((34, 74, 124, 184), fill=(210, 220, 235))
    _face(d, 79, 124, 32)
    _text(d, (136, 78), "Surname: EXAMPLE")
    _text(d, (136, 98), "Given names: JANE ALEX")
    _text(d, (136, 118), "Born: 12.03.1990")
    _text(d, (136, 138), "No. X1234567")
    _text(d, (136, 170), "Expires 2031-04-30", 12)
    return img


def draw_passport(rng):
    img, d = _canvas((120, 30, 40))
    d.rectangle((16, 16, 304, 224), fill=(235, 230, 215))
    _text(d, (26, 22), "PASSPORT / PASSEPORT", 16, (120, 30, 40))
    _face(d, 75, 105, 36, skin=(190, 140, 100), hair=(20, 20, 20))
    _text(d, (130, 55), "Type P   Code XYZ")
    _text(d, (130, 75), "Name: SAMPLE, ROBIN")
    _text(d, (130, 95), "Nationality: UTOPIAN")
    _text(d, (130, 115), "Date of birth: 1985-07-01")
    _text(d, (130, 135), "Sex: F")
    _text(d, (22, 180), "P<XYZSAMPLE<<ROBIN<<<<<<<<<<<<<<<<<", 13)
    _text(d, (22, 198), "X9876543<2XYZ8507014F3101015<<<<<<", 13)
    return img


def draw_payment_card(rng):
    img, d = _canvas((230, 230, 230))
    d.rounded_rectangle((30, 40, 290, 200), radius=16, fill=(30, 70, 140))
    d.rectangle((50, 80, 90, 110), fill=(220, 190, 90))
    digits = " ".join("".join(str(rng.randint(0, 9)) for _ in range(4)) for _ in range(4))
    _text(d, (50, 125), digits, 20, (255, 255, 255))
    _text(d, (50, 160), "J. EXAMPLE-PERSON", 14, (255, 255, 255))
    _text(d, (220, 160), "09/29", 14, (255, 255, 255))
    return img


def draw_prescription(rng):
    img, d = _canvas((250, 250, 250))
    d.rectangle((10, 10, 310, 230), outline=(0, 100, 160), width=3)
    _text(d, (20, 18), "Dr. Placeholder Clinic", 16, (0, 100, 160))
    _text(d, (20, 48), "Patient: Chris Fakename")
    _text(d, (20, 68), "Date: 2024-02-14")
    _text(d, (20, 98), "Rx  Amoxicillin 500 mg", 16)
    _text(d, (20, 120), "1 tablet 3x daily, 7 days")
    _text(d, (20, 150), "Diagnosis: acute sinusitis")
    d.line((180, 205, 290, 195), fill=(0, 0, 120), width=2)
    return img


def draw_street_sign(rng):
    img, d = _canvas((150, 200, 240))
    d.rectangle((0, 190, 320, 240), fill=(110, 110, 110))
    d.rectangle((155, 90, 165, 200), fill=(90, 90, 90))
    d.rectangle((60, 50, 260, 95), fill=(20, 110, 60), outline=(255, 255, 255), width=3)
    _text(d, (75, 60), "Maple Grove Road", 20, (255, 255, 255))
    for x in (10, 260):
        d.rectangle((x, 120, x + 50, 190), fill=(180, 120, 80))
    return img


def draw_car_plate(rng):
    img, d = _canvas((170, 200, 230))
    d.rectangle((0, 180, 320, 240), fill=(80, 80, 80))
    d.rounded_rectangle((40, 110, 280, 180), radius=18, fill=(200, 30, 30))
    d.polygon([(90, 110), (120, 70), (210, 70), (240, 110)], fill=(200, 30, 30))
    d.polygon([(100, 108), (125, 78), (205, 78), (230, 108)], fill=(180, 220, 240))
    for x in (85, 235):
        d.ellipse((x - 22, 160, x + 22, 204), fill=(20, 20, 20))
    d.rectangle((115, 140, 205, 165), fill=(250, 250, 250), outline=(0, 0, 0))
    plate = f"{rng.choice('ABCDEFGH')}{rng.choice('KLMNPRST')} {rng.randint(100, 999)} {rng.choice('XYZW')}"
    _text(d, (122, 143), plate, 16)
    return img


def draw_crowd(rng):
    img, d = _canvas((190, 220, 190))
    for _ in range(26):
        x, y = rng.randint(15, 305), rng.randint(20, 150)
        color = tuple(rng.randint(20, 140) for _ in range(3))
        _stick(d, x, y, rng.uniform(0.6, 1.0), color)
    return img


def draw_landscape(rng):
    img, d = _canvas((140, 190, 240))
    d.polygon([(0, 170), (80, 70), (160, 160), (230, 90), (320, 170)], fill=(100, 120, 100))
    d.rectangle((0, 170, 320, 240), fill=(90, 160, 80))
    d.ellipse((250, 20, 290, 60), fill=(250, 220, 90))
    for _ in range(6):
        x = rng.randint(10, 300)
        d.polygon([(x, 200), (x - 10, 225), (x + 10, 225)], fill=(40, 100, 50))
    return img


def draw_tattoo(rng):
    img, d = _canvas((230, 225, 215))
    d.rounded_rectangle((20, 80, 300, 160), radius=40, fill=(225, 185, 150))
    d.ellipse((120, 92, 200, 148), outline=(30, 40, 90), width=4)
    d.polygon([(160, 96), (172, 120), (160, 144), (148, 120)], outline=(30, 40, 90), fill=(120, 30, 60))
    _text(d, (210, 108), "M.R. 1998", 14, (30, 40, 90))
    return img


def draw_laptop_email(rng):
    img, d = _canvas((90, 70, 60))
    d.rectangle((40, 30, 280, 180), fill=(30, 30, 30))
    d.rectangle((50, 40, 270, 170), fill=(245, 245, 250))
    _text(d, (58, 48), "Inbox", 14, (30, 80, 160))
    _text(d, (58, 72), "From: sam.sample@example.com", 12)
    _text(d, (58, 90), "To: kim.k@example.org", 12)
    _text(d, (58, 108), "Re: meeting on Friday", 12)
    _lines(d, 58, 132, 190, 3, rng)
    d.polygon([(20, 180), (300, 180), (315, 200), (5, 200)], fill=(150, 150, 150))
    return img


def draw_protest_sign(rng):
    img, d = _canvas((200, 200, 210))
    for x in (40, 110, 230, 280):
        _stick(d, x, 130, 0.9)
    d.rectangle((150, 95, 156, 200), fill=(120, 80, 40))
    d.rectangle((95, 40, 215, 100), fill=(255, 255, 240), outline=(0, 0, 0), width=2)
    _text(d, (104, 48), "VOTE GREEN", 16, (20, 120, 40))
    _text(d, (104, 72), "Faith & Climate", 13, (20, 20, 20))
    return img


def draw_bank_statement(rng):
    img, d = _canvas((245, 245, 240))
    _text(d, (15, 10), "Example Bank - Statement", 16, (10, 60, 110))
    _text(d, (15, 34), "Account holder: Pat Placeholder", 12)
    _text(d, (15, 50), "IBAN XY00 1234 5678 9012 34", 12)
    y = 78
    for day in range(1, 8):
        amount = rng.randint(5, 900) + rng.randint(0, 99) / 100
        _text(d, (15, y), f"2024-03-{day:02d}  Card payment", 12)
        _text(d, (230, y), f"-{amount:8.2f}", 12)
        y += 18
    _text(d, (15, y + 6), "Balance  1,234.56", 14)
    return img


def draw_jersey(rng):
    img, d = _canvas((90, 160, 90))
    d.polygon([(90, 40), (130, 25), (190, 25), (230, 40), (270, 90), (235, 110), (225, 90), (225, 220), (95, 220), (95, 90),
               (85, 110), (50, 90)], fill=(230, 60, 40))
    _text(d, (128, 60), "MAYA", 26, (255, 255, 255))
    _text(d, (138, 100), "10", 48, (255, 255, 255))
    return img


def draw_wheelchair(rng):
    img, d = _canvas((235, 235, 235))
    d.rectangle((70, 20, 250, 200), fill=(20, 80, 170))
    d.ellipse((125, 35, 150, 60), fill=(255, 255, 255))
    d.line((138, 62, 138, 120), fill=(255, 255, 255), width=10)
    d.line((138, 120, 190, 120), fill=(255, 255, 255), width=10)
    d.line((190, 120, 205, 165), fill=(255, 255, 255), width=10)
    d.arc((95, 105, 175, 185), 20, 300, fill=(255, 255, 255), width=8)
    _stick(d, 285, 120, 0.8)
    return img


def draw_receipt(rng):
    img, d = _canvas((120, 110, 100))
    d.rectangle((90, 10, 230, 230), fill=(252, 252, 245))
    _text(d, (100, 16), "CORNER SHOP", 14)
    _text(d, (100, 34), "2024-05-18 14:02", 11)
    y = 56
    for item in ("Bread", "Milk", "Apples", "Coffee", "Wine"):
        _text(d, (100, y), item, 12)
        _text(d, (180, y), f"{rng.randint(1, 15)}.{rng.randint(0, 99):02d}", 12)
        y += 18
    _text(d, (100, y + 8), "VISA ****4821", 12)
    _text(d, (100, y + 26), "TOTAL 31.40", 13)
    return img


def draw_desk_document(rng):
    img, d = _canvas((160, 110, 70))
    d.rectangle((60, 30, 200, 210), fill=(250, 250, 250))
    _text(d, (70, 38), "Meeting notes", 13)
    _lines(d, 70, 64, 115, 10, rng)
    d.ellipse((230, 60, 290, 120), fill=(240, 240, 240), outline=(80, 80, 80), width=3)
    d.ellipse((245, 75, 275, 105), fill=(90, 50, 20))
    d.line((215, 200, 300, 170), fill=(30, 30, 120), width=4)
    return img


def draw_wedding_banner(rng):
    img, d = _canvas((250, 235, 240))
    d.rectangle((20, 20, 300, 80), fill=(255, 255, 255), outline=(200, 150, 170), width=3)
    _text(d, (35, 30), "Alex & Sam", 20, (170, 60, 100))
    _text(d, (35, 56), "June 14, 2025 - Rosewood Hall", 12, (120, 60, 80))
    for x in (60, 120, 200, 260):
        _stick(d, x, 120, 0.9, (90, 60, 90))
    return img


def draw_empty_room(rng):
    img, d = _canvas((225, 215, 200))
    d.polygon([(0, 180), (320, 180), (320, 240), (0, 240)], fill=(160, 120, 80))
    d.rectangle((120, 40, 200, 110), fill=(170, 210, 240), outline=(255, 255, 255), width=4)
    d.line((160, 40, 160, 110), fill=(255, 255, 255), width=3)
    return img


def draw_beach(rng):
    img, d = _canvas((120, 190, 240))
    d.rectangle((0, 120, 320, 170), fill=(40, 120, 200))
    d.rectangle((0, 170, 320, 240), fill=(240, 220, 160))
    d.ellipse((30, 20, 80, 70), fill=(255, 230, 90))
    d.pieslice((200, 150, 280, 230), 180, 360, fill=(230, 80, 80))
    _stick(d, 120, 160, 0.7, (120, 70, 50))
    _stick(d, 150, 165, 0.6, (120, 70, 50))
    return img


def draw_concert(rng):
    img, d = _canvas((20, 20, 40))
    d.rectangle((60, 20, 260, 90), fill=(60, 40, 90))
    _stick(d, 160, 28, 0.9, (240, 240, 240))
    for _ in range(4):
        x = rng.randint(60, 260)
        d.polygon([(x, 20), (x - 40, 110), (x + 40, 110)], fill=(90, 80, 40))
    for _ in range(30):
        x, y = rng.randint(5, 315), rng.randint(130, 220)
        d.ellipse((x - 9, y - 9, x + 9, y + 9), fill=(rng.randint(40, 90),) * 3)
    _text(d, (10, 222), "SUMMER FEST 2025", 12, (230, 230, 120))
    return img


def draw_house_number(rng):
    img, d = _canvas((160, 200, 235))
    d.rectangle((70, 90, 250, 220), fill=(210, 170, 130))
    d.polygon([(55, 95), (160, 30), (265, 95)], fill=(140, 60, 50))
    d.rectangle((140, 150, 180, 220), fill=(90, 60, 40))
    d.rectangle((190, 110, 235, 140), fill=(250, 250, 250), outline=(20, 20, 20))
    _text(d, (198, 114), str(rng.randint(10, 99)), 18)
    d.rectangle((90, 115, 125, 145), fill=(170, 210, 240))
    return img


def draw_hospital_bed(rng):
    img, d = _canvas((230, 240, 240))
    d.rectangle((40, 130, 280, 160), fill=(200, 200, 210))
    _face(d, 80, 115, 22, mood="sad")
    d.rectangle((100, 110, 270, 135), fill=(160, 200, 230))
    d.line((250, 20, 250, 120), fill=(120, 120, 120), width=3)
    d.rectangle((238, 25, 262, 55), fill=(220, 235, 255), outline=(100, 100, 100))
    _text(d, (40, 190), "Ward 3 - Bed 12", 14)
    return img


def draw_bar_night(rng):
    img, d = _canvas((50, 30, 30))
    d.rectangle((0, 150, 320, 175), fill=(110, 70, 40))
    for x in (60, 130, 200, 260):
        d.rectangle((x, 110, x + 14, 150), fill=(150, 200, 120))
        d.rectangle((x + 4, 96, x + 10, 110), fill=(150, 200, 120))
    _stick(d, 100, 40, 1.0, (230, 200, 170))
    d.line((112, 62, 140, 55), fill=(240, 240, 240), width=2)  # cigarette
    d.ellipse((140, 40, 156, 54), outline=(180, 180, 180))
    return img
