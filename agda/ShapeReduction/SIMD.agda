{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Shape reduction for SIMD functions (TrainVerify, Appendix C,
-- Definitions 10-12, 14-16, Claim 6, Lemmas 7-8, Theorem 10),
-- with every side condition as an explicit hypothesis.
--
-- A SIMD function with n-dimensional output, m-dimensional input and a
-- kernel of arity k is given by
--   * a kernel      θ : Vec V k → V,
--   * the linear part M of its affine dependency map, as its n columns
--     (each an m-dimensional index), and
--   * k offsets b₁ … b_k,
-- and computes  y[i] = θ (x[M·i + b₁], …, x[M·i + b_k]).
--
-- Theorem `simd-reduction`: two SIMD functions f, g with the same
-- output/input ranks and the same kernel arity, whose offsets are
-- duplicate-free (Fact 5) and whose kernels are well-formed
-- (Definition 16, every argument matters), and which agree for all
-- inputs at the index 0 and at the n unit indices e_j (all corners of
-- {0,1}^n), agree for all inputs at every index.
--
-- Input tensors are total functions Index m → V (so the reduced shape
-- must contain every index M·e + b_l used at the corners; see
-- docs/proofs.md).  V must be inhabited (v₀), e.g. the reals.
------------------------------------------------------------------------
module ShapeReduction.SIMD (V : Set) (v₀ : V) where

open import Data.Nat using (ℕ; zero; suc; _+_; _*_; _≤_; _⊓_; z≤n; s≤s)
open import Data.Nat.Properties
  using (_≟_; ≤-refl; ≤-trans; ≤-antisym; +-identityʳ; *-identityˡ; +-monoʳ-≤;
         +-cancelˡ-≡; +-cancelʳ-≡; m⊓n≤m; m⊓n≤n; ⊓-sel)
open import Data.Fin using (Fin; zero; suc)
open import Data.Vec using (Vec; []; _∷_; lookup; map; replicate; zipWith; tabulate; _[_]≔_)
open import Data.Vec.Properties
  using (lookup-map; lookup-zipWith; lookup∘tabulate; lookup∘update′; ≡-dec)
open import Data.Product using (∃; ∃₂; _×_; _,_; proj₁; proj₂)
open import Data.Sum using (_⊎_; inj₁; inj₂)
open import Data.Empty using (⊥-elim)
open import Function.Base using (_∘_)
open import Relation.Nullary using (¬_; Dec; yes; no)
open import Relation.Binary.PropositionalEquality

------------------------------------------------------------------------
-- Indices

Index : ℕ → Set
Index = Vec ℕ

infixl 6 _⊞_
_⊞_ : ∀ {m} → Index m → Index m → Index m
_⊞_ = zipWith _+_

0ᵢ : ∀ {m} → Index m
0ᵢ = replicate 0

scale : ∀ {m} → ℕ → Index m → Index m
scale c = map (c *_)

-- M · i for M given by its columns
_·_ : ∀ {n m} → Vec (Index m) n → Index n → Index m
[]      · []      = 0ᵢ
(c ∷ M) · (x ∷ i) = scale x c ⊞ (M · i)

unit : ∀ {n} → Fin n → Index n
unit {suc n} zero    = 1 ∷ 0ᵢ
unit {suc n} (suc j) = 0 ∷ unit j

-- the corners {0,1}^n
Corner : ∀ {n} → Index n → Set
Corner i = ∀ c → lookup i c ≤ 1

corner-0 : ∀ {n} → Corner {n} 0ᵢ
corner-0 {suc n} zero    = z≤n
corner-0 {suc n} (suc c) = corner-0 c

corner-unit : ∀ {n} (j : Fin n) → Corner (unit j)
corner-unit zero    zero    = s≤s z≤n
corner-unit zero    (suc c) = corner-0 c
corner-unit (suc j) zero    = z≤n
corner-unit (suc j) (suc c) = corner-unit j c

vext : ∀ {A : Set} {k} {xs ys : Vec A k} → (∀ l → lookup xs l ≡ lookup ys l) → xs ≡ ys
vext {xs = []}     {[]}     p = refl
vext {xs = x ∷ xs} {y ∷ ys} p = cong₂ _∷_ (p zero) (vext (p ∘ suc))

⊞-identityˡ : ∀ {m} (b : Index m) → 0ᵢ ⊞ b ≡ b
⊞-identityˡ []      = refl
⊞-identityˡ (x ∷ b) = cong (x ∷_) (⊞-identityˡ b)

⊞-identityʳ : ∀ {m} (b : Index m) → b ⊞ 0ᵢ ≡ b
⊞-identityʳ []      = refl
⊞-identityʳ (x ∷ b) = cong₂ _∷_ (+-identityʳ x) (⊞-identityʳ b)

scale-0 : ∀ {m} (c : Index m) → scale 0 c ≡ 0ᵢ
scale-0 []      = refl
scale-0 (x ∷ c) = cong (0 ∷_) (scale-0 c)

scale-1 : ∀ {m} (c : Index m) → scale 1 c ≡ c
scale-1 []      = refl
scale-1 (x ∷ c) = cong₂ _∷_ (*-identityˡ x) (scale-1 c)

mul-0 : ∀ {n m} (M : Vec (Index m) n) → M · 0ᵢ ≡ 0ᵢ
mul-0 []      = refl
mul-0 (c ∷ M) rewrite scale-0 c | mul-0 M = ⊞-identityˡ 0ᵢ

mul-unit : ∀ {n m} (M : Vec (Index m) n) j → M · unit j ≡ lookup M j
mul-unit (c ∷ M) zero    rewrite scale-1 c | mul-0 M = ⊞-identityʳ c
mul-unit (c ∷ M) (suc j) rewrite scale-0 c | mul-unit M j = ⊞-identityˡ (lookup M j)

⊞-cancelˡ : ∀ {m} (a b c : Index m) → a ⊞ b ≡ a ⊞ c → b ≡ c
⊞-cancelˡ [] [] [] e = refl
⊞-cancelˡ (x ∷ a) (y ∷ b) (z ∷ c) e =
  cong₂ _∷_ (+-cancelˡ-≡ x (cong hd e)) (⊞-cancelˡ a b c (cong tl e))
  where
    hd : ∀ {n} → Vec ℕ (suc n) → ℕ
    hd (v ∷ _) = v
    tl : ∀ {n} → Vec ℕ (suc n) → Vec ℕ n
    tl (_ ∷ vs) = vs

lookup-⊞ : ∀ {m} (a b : Index m) c → lookup (a ⊞ b) c ≡ lookup a c + lookup b c
lookup-⊞ a b c = lookup-zipWith _+_ c a b

------------------------------------------------------------------------
-- SIMD functions (Definitions 10-12)

Tensor : ℕ → Set
Tensor m = Index m → V

record SIMD (n m k : ℕ) : Set where
  constructor simd
  field
    kernel : Vec V k → V
    lin    : Vec (Index m) n
    off    : Vec (Index m) k
open SIMD public

deps : ∀ {n m k} → SIMD n m k → Index n → Vec (Index m) k
deps f i = map ((lin f · i) ⊞_) (off f)

apply : ∀ {n m k} → SIMD n m k → Tensor m → Index n → V
apply f x i = kernel f (map x (deps f i))

-- Fact 5: no duplicated input indices
Distinct : ∀ {A : Set} {k} → Vec A k → Set
Distinct xs = ∀ l l' → lookup xs l ≡ lookup xs l' → l ≡ l'

-- Definition 16, with its quantifiers in the order the proof needs:
-- for every argument position l, changing that argument alone can
-- change the result.
WellFormed : ∀ {k} → (Vec V k → V) → Set
WellFormed θ = ∀ l → ∃₂ λ X v → θ X ≢ θ (X [ l ]≔ v)

------------------------------------------------------------------------
-- Membership of an index in a vector of indices is decidable

infix 4 _∈ᵥ_
_∈ᵥ_ : ∀ {m k} → Index m → Vec (Index m) k → Set
a ∈ᵥ B = ∃ λ l → lookup B l ≡ a

find : ∀ {m k} (a : Index m) (B : Vec (Index m) k) → Dec (a ∈ᵥ B)
find a [] = no (λ { (() , _) })
find a (b ∷ B) with ≡-dec _≟_ b a
... | yes e = yes (zero , e)
... | no ne with find a B
...   | yes (l , e) = yes (suc l , e)
...   | no nin = no (λ { (zero , e) → ne e ; (suc l , e) → nin (l , e) })

-- the input tensor that holds X at the indices A (and v₀ elsewhere)
mk : ∀ {m k} → Vec (Index m) k → Vec V k → Tensor m
mk A X p with find p A
... | yes (l , _) = lookup X l
... | no _        = v₀

mk-at : ∀ {m k} (A : Vec (Index m) k) → Distinct A → ∀ X l → mk A X (lookup A l) ≡ lookup X l
mk-at A dA X l with find (lookup A l) A
... | yes (l' , e) = cong (lookup X) (dA l' l e)
... | no nin       = ⊥-elim (nin (l , refl))

mk-map : ∀ {m k} (A : Vec (Index m) k) → Distinct A → ∀ X → map (mk A X) A ≡ X
mk-map A dA X = vext (λ l → trans (lookup-map l (mk A X) A) (mk-at A dA X l))

mk-other : ∀ {m k} (A : Vec (Index m) k) X l v p → (∀ l' → lookup A l' ≡ p → l' ≢ l) →
           mk A X p ≡ mk A (X [ l ]≔ v) p
mk-other A X l v p h with find p A
... | yes (l' , e) = sym (lookup∘update′ (h l' e) X v)
... | no _         = refl

------------------------------------------------------------------------
-- Claim 6: if θ(x[A]) = θ'(x[B]) for all inputs x, A is duplicate-free
-- and θ is well-formed, then every index of A occurs in B.

claim6 : ∀ {m k} (θ θ' : Vec V k → V) (A B : Vec (Index m) k) → Distinct A → WellFormed θ →
         (∀ x → θ (map x A) ≡ θ' (map x B)) → ∀ l → lookup A l ∈ᵥ B
claim6 θ θ' A B dA wf agree l with find (lookup A l) B
... | yes p = p
... | no nin with wf l
...   | X , v , ne = ⊥-elim (ne chain)
  where
    X' = X [ l ]≔ v
    same : map (mk A X) B ≡ map (mk A X') B
    same = vext λ l' →
      trans (lookup-map l' (mk A X) B)
      (trans (mk-other A X l v (lookup B l')
                (λ l'' e e' → nin (l' , trans (sym e) (cong (lookup A) e'))))
             (sym (lookup-map l' (mk A X') B)))
    chain : θ X ≡ θ X'
    chain = trans (cong θ (sym (mk-map A dA X)))
            (trans (agree (mk A X))
            (trans (cong θ' same)
            (trans (sym (agree (mk A X'))) (cong θ (mk-map A dA X')))))

------------------------------------------------------------------------
-- Lemma 7 (corrected): agreement at one point, with B ⊆ A through π,
-- relates the kernels: θ X = θ' (X ∘ π) for every argument vector X.

kernel-rel : ∀ {m k} (θ θ' : Vec V k → V) (A B : Vec (Index m) k) → Distinct A →
             (sub : ∀ l → lookup B l ∈ᵥ A) → (∀ x → θ (map x A) ≡ θ' (map x B)) →
             ∀ X → θ X ≡ θ' (tabulate (λ l → lookup X (proj₁ (sub l))))
kernel-rel θ θ' A B dA sub agree X =
  trans (cong θ (sym (mk-map A dA X)))
  (trans (agree (mk A X))
  (cong θ' (vext λ l →
    trans (lookup-map l (mk A X) B)
    (trans (cong (mk A X) (sym (proj₂ (sub l))))
    (trans (mk-at A dA X (proj₁ (sub l)))
           (sym (lookup∘tabulate (λ l → lookup X (proj₁ (sub l))) l)))))))

-- ... hence agreement at one point transfers to every common shift c
transfer : ∀ {m k} (θ θ' : Vec V k → V) (A B : Vec (Index m) k) → Distinct A →
           (∀ l → lookup B l ∈ᵥ A) → (∀ x → θ (map x A) ≡ θ' (map x B)) →
           ∀ (c : Index m) x → θ (map x (map (c ⊞_) A)) ≡ θ' (map x (map (c ⊞_) B))
transfer θ θ' A B dA sub agree c x =
  trans (kernel-rel θ θ' A B dA sub agree Y)
  (cong θ' (vext λ l →
    trans (lookup∘tabulate (λ l → lookup Y (proj₁ (sub l))) l)
    (trans (lookup-map (proj₁ (sub l)) x (map (c ⊞_) A))
    (trans (cong x (lookup-map (proj₁ (sub l)) (c ⊞_) A))
    (trans (cong (λ z → x (c ⊞ z)) (proj₂ (sub l)))
    (sym (trans (lookup-map l x (map (c ⊞_) B)) (cong x (lookup-map l (c ⊞_) B)))))))))
  where Y = map x (map (c ⊞_) A)

------------------------------------------------------------------------
-- Lemma 8 (corrected, replacing Claim 9): a finite non-empty set of
-- indices determines its shift: if A and B have the same elements and
-- d + A and d' + B have the same elements, then d = d'.  (Proof: the
-- minimum of every coordinate.)

IsMin : ∀ {m k} → Fin m → ℕ → Vec (Index m) k → Set
IsMin c μ A = (∀ l → μ ≤ lookup (lookup A l) c) × (∃ λ l → lookup (lookup A l) c ≡ μ)

min-exists : ∀ {m k} c (A : Vec (Index m) (suc k)) → ∃ λ μ → IsMin c μ A
min-exists c (a ∷ []) = lookup a c , (λ { zero → ≤-refl }) , (zero , refl)
min-exists c (a ∷ b ∷ A) with min-exists c (b ∷ A)
... | μ , lo , (l , e) = lookup a c ⊓ μ , lower , attained (⊓-sel (lookup a c) μ)
  where
    lower : ∀ l' → lookup a c ⊓ μ ≤ lookup (lookup (a ∷ b ∷ A) l') c
    lower zero     = m⊓n≤m (lookup a c) μ
    lower (suc l') = ≤-trans (m⊓n≤n (lookup a c) μ) (lo l')
    attained : lookup a c ⊓ μ ≡ lookup a c ⊎ lookup a c ⊓ μ ≡ μ →
               ∃ λ l' → lookup (lookup (a ∷ b ∷ A) l') c ≡ lookup a c ⊓ μ
    attained (inj₁ q) = zero , sym q
    attained (inj₂ q) = suc l , trans e (sym q)

min-unique : ∀ {m k k'} c {μ μ'} (A : Vec (Index m) k) (B : Vec (Index m) k') →
             IsMin c μ A → IsMin c μ' B →
             (∀ l → lookup A l ∈ᵥ B) → (∀ l → lookup B l ∈ᵥ A) → μ ≡ μ'
min-unique c A B (loA , (lA , eA)) (loB , (lB , eB)) AB BA =
  ≤-antisym
    (subst (_ ≤_) eB (subst (λ z → _ ≤ lookup z c) (proj₂ (BA lB)) (loA (proj₁ (BA lB)))))
    (subst (_ ≤_) eA (subst (λ z → _ ≤ lookup z c) (proj₂ (AB lA)) (loB (proj₁ (AB lA)))))

min-shift : ∀ {m k} c {μ} (d : Index m) (A : Vec (Index m) k) → IsMin c μ A →
            IsMin c (lookup d c + μ) (map (d ⊞_) A)
min-shift c d A (lo , (l , e)) =
  (λ l' → subst (_ ≤_) (sym (at l')) (+-monoʳ-≤ (lookup d c) (lo l'))) ,
  (l , trans (at l) (cong (lookup d c +_) e))
  where
    at : ∀ l' → lookup (lookup (map (d ⊞_) A) l') c ≡ lookup d c + lookup (lookup A l') c
    at l' = trans (cong (λ z → lookup z c) (lookup-map l' (d ⊞_) A)) (lookup-⊞ d (lookup A l') c)

shift-determined : ∀ {m k} (A B : Vec (Index m) (suc k)) (d d' : Index m) →
  (∀ l → lookup A l ∈ᵥ B) → (∀ l → lookup B l ∈ᵥ A) →
  (∀ l → lookup (map (d ⊞_) A) l ∈ᵥ map (d' ⊞_) B) →
  (∀ l → lookup (map (d' ⊞_) B) l ∈ᵥ map (d ⊞_) A) → d ≡ d'
shift-determined A B d d' AB BA AB' BA' = vext coord
  where
    coord : ∀ c → lookup d c ≡ lookup d' c
    coord c with min-exists c A | min-exists c B
    ... | μ , mA | μ' , mB =
      +-cancelʳ-≡ (lookup d c) (lookup d' c)
        (trans (min-unique c (map (d ⊞_) A) (map (d' ⊞_) B)
                  (min-shift c d A mA) (min-shift c d' B mB) AB' BA')
               (cong (lookup d' c +_) (sym (min-unique c A B mA mB AB BA))))

distinct-shift : ∀ {m k} (d : Index m) (A : Vec (Index m) k) → Distinct A → Distinct (map (d ⊞_) A)
distinct-shift d A dA l l' e =
  dA l l' (⊞-cancelˡ d _ _ (trans (sym (lookup-map l (d ⊞_) A)) (trans e (lookup-map l' (d ⊞_) A))))

------------------------------------------------------------------------
-- Theorem 10 (corrected)

shift-0 : ∀ {n m k} (M : Vec (Index m) n) (A : Vec (Index m) k) → map ((M · 0ᵢ) ⊞_) A ≡ A
shift-0 M A = vext λ l → trans (lookup-map l ((M · 0ᵢ) ⊞_) A)
                               (trans (cong (_⊞ lookup A l) (mul-0 M)) (⊞-identityˡ (lookup A l)))

simd-reduction :
  ∀ {n m k} (f g : SIMD n m k) →
  Distinct (off f) → Distinct (off g) →            -- Fact 5, for both
  WellFormed (kernel f) → WellFormed (kernel g) →  -- Definition 16, for both
  (∀ x → apply f x 0ᵢ ≡ apply g x 0ᵢ) →             -- agreement at the corner 0
  (∀ j x → apply f x (unit j) ≡ apply g x (unit j)) → -- ... and at the corners e_j
  ∀ x i → apply f x i ≡ apply g x i
simd-reduction (simd θf Mf []) (simd θg Mg []) dA dB wf wg p0 pu x i = p0 x
simd-reduction {n} {m} {suc k} (simd θf Mf A) (simd θg Mg B) dA dB wf wg p0 pu x i =
  trans (cong (λ M → θf (map x (map ((M · i) ⊞_) A))) Mf≡Mg)
        (transfer θf θg A B dA BA agree0 (Mg · i) x)
  where
    agree0 : ∀ x → θf (map x A) ≡ θg (map x B)
    agree0 x = trans (cong (θf ∘ map x) (sym (shift-0 Mf A)))
               (trans (p0 x) (cong (θg ∘ map x) (shift-0 Mg B)))
    AB : ∀ l → lookup A l ∈ᵥ B
    AB = claim6 θf θg A B dA wf agree0
    BA : ∀ l → lookup B l ∈ᵥ A
    BA = claim6 θg θf B A dB wg (λ x → sym (agree0 x))
    agree-j : ∀ j x → θf (map x (map (lookup Mf j ⊞_) A)) ≡ θg (map x (map (lookup Mg j ⊞_) B))
    agree-j j x = trans (cong (λ c → θf (map x (map (c ⊞_) A))) (sym (mul-unit Mf j)))
                  (trans (pu j x) (cong (λ c → θg (map x (map (c ⊞_) B))) (mul-unit Mg j)))
    col : ∀ j → lookup Mf j ≡ lookup Mg j
    col j = shift-determined A B (lookup Mf j) (lookup Mg j) AB BA
      (claim6 θf θg _ _ (distinct-shift (lookup Mf j) A dA) wf (agree-j j))
      (claim6 θg θf _ _ (distinct-shift (lookup Mg j) B dB) wg (λ x → sym (agree-j j x)))
    Mf≡Mg : Mf ≡ Mg
    Mf≡Mg = vext col

-- The form the checker uses: agreement at every corner of {0,1}^n.
simd-corners :
  ∀ {n m k} (f g : SIMD n m k) →
  Distinct (off f) → Distinct (off g) → WellFormed (kernel f) → WellFormed (kernel g) →
  (∀ i → Corner i → ∀ x → apply f x i ≡ apply g x i) →
  ∀ x i → apply f x i ≡ apply g x i
simd-corners f g dA dB wf wg corners =
  simd-reduction f g dA dB wf wg (corners 0ᵢ corner-0) (λ j → corners (unit j) (corner-unit j))
