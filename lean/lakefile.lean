import Lake
open Lake DSL

package pvcert where

@[default_target]
lean_lib Pvcert where
  roots := #[`Pvcert]
